import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Config } from '../src/config';
import { ZERO_ADDRESS } from '../src/settle/payout';
import { encodeFunctionData, parseEventLogs, type Address, type Hex } from 'viem';
import { awaitRecordedReceipt, recordedSucceeded, revertOf } from '../src/chains/evm/calls';
import type { EvmNetworkId } from '../src/chains/networks';
import { BRIDGE_ABANDONED, BridgeTransfer } from '../src/db/bridge-transfer';
import { Settlement } from '../src/db/entities';
import { relayerTxId } from '../src/temporal/workflow-ids';
import type { BridgeRefund, CrossChainSettleInput, TreasuryDelivery } from '../src/schemes/eip3009-crosschain/types';
import { emittedMessage, pollAttestation, type AttestationPoll, type CrossChainActivityDeps } from './crosschain';
import { facilitatorBridgeAbi, messageTransmitterV2Abi } from '../src/chains/evm/abi';
import type { RoleSigners } from './signers';
import { sendTransferOnce } from './transfer-once';
import { nonceOfId, provenPayment } from '../src/chains/evm/payment-proof';

/** The revenue wallet (the `revenue` signer) advances the refund of an abandoned leg. */
export type BridgeRefundDeps = CrossChainActivityDeps &
  RoleSigners & { config: CrossChainActivityDeps['config'] & Partial<Pick<Config, 'BRIDGE_TREASURY_ADDRESS'>> };

/**
 * An operator's refund of a plain cross-chain settlement whose bridge leg did not deliver
 * (docs/decisions/abandoning-a-bridge-leg.md): the payer gets the gross amount back on the source
 * network from the revenue wallet. Who and how much come only from our records; the leg is marked
 * abandoned before anything is signed, so no later run of it mints (submitBridgeMint refuses).
 */
export function createBridgeRefundActivities(deps: BridgeRefundDeps) {
  const bridgeOf = (id: EvmNetworkId) => {
    const n = deps.networks.get(id);
    if (!n?.bridgeTransmitter || !n.facilitator || !n.usdc)
      throw ApplicationFailure.nonRetryable(`network ${id} has no bridge`, 'cross_chain_not_supported');
    return n as typeof n & { bridgeTransmitter: Address; facilitator: Address; usdc: Address };
  };

  /**
   * The leg's message with its attestation, as the attestation service has it now (pending until it
   * is complete); the message the burn emitted is read from the source receipt, not from our records.
   */
  const attestationOf = async (leg: BridgeTransfer): Promise<AttestationPoll> => {
    const source = bridgeOf(leg.sourceNetwork as EvmNetworkId);
    const message = await emittedMessage(deps.relayerFor(source.id).client, source.bridgeTransmitter, leg.sourceTx as Hex);
    if (!message) throw ApplicationFailure.nonRetryable(`source transaction ${leg.sourceTx} emitted no burn message`, 'RefundNotOwed');
    return pollAttestation(deps.config.BRIDGE_ATTESTATION_URL, { ...leg, message });
  };

  /**
   * The nonce of the leg's message when the destination transmitter marks it used (delivered, by
   * anyone), else undefined. The nonce is the one recorded at attestation or, without one, the
   * attestation service's; a message the service has not attested cannot have been delivered.
   */
  const deliveredOnChain = async (leg: BridgeTransfer): Promise<Hex | undefined> => {
    let nonce = leg.bridgeNonce as Hex | null | undefined;
    if (!nonce) {
      const poll = await attestationOf(leg);
      if (poll.status !== 'complete') return undefined;
      nonce = poll.nonce;
    }
    const destination = bridgeOf(leg.destinationNetwork as EvmNetworkId);
    const used = await deps.relayerFor(destination.id).client.readContract({
      address: destination.bridgeTransmitter,
      abi: messageTransmitterV2Abi,
      functionName: 'usedNonces',
      args: [nonce],
    });
    return used !== 0n ? nonce : undefined;
  };

  /** The settlement and its leg as our records have them; `RefundNotOwed` (not retried) unless a refund is owed. */
  const owed = async (input: CrossChainSettleInput) => {
    const em = deps.db.em.fork();
    const notOwed = (why: string) => ApplicationFailure.nonRetryable(`no refund owed for ${input.workflowId}: ${why}`, 'RefundNotOwed');
    const s = await em.findOne(Settlement, { id: input.workflowId });
    if (!s || s.route !== 'eip3009-crosschain' || !['needs_review', 'refunding'].includes(s.state) || !s.transaction)
      throw notOwed(`its settlement is ${s?.state ?? 'not recorded'}, not a cross-chain settlement waiting for review`);
    const leg = await em.findOne(BridgeTransfer, { settlementId: s.id, sourceTx: s.transaction });
    if (!leg) throw notOwed('it has no bridge leg of its own');
    // A top-up's leg pays the top-up relayer, and its top-up refunds it (activities/topup-refund.ts).
    if (deps.topUpRelayer && leg.recipient.toLowerCase() === deps.topUpRelayer.toLowerCase()) throw notOwed('it is a top-up leg');
    if (leg.state !== 'needs_review' && leg.state !== BRIDGE_ABANDONED) throw notOwed(`its bridge leg is ${leg.state}`);
    const destination = deps.relayerFor(leg.destinationNetwork as EvmNetworkId);
    if (await recordedSucceeded(destination, relayerTxId(leg.id, 'mint'), deps.config.RECEIPT_WAIT_MS)) throw notOwed('its mint succeeded');
    // Delivered on chain, whoever did it and whatever our records say: the destination transmitter
    // marks the message's nonce used (MessageTransmitterV2 `usedNonces`).
    const delivered = await deliveredOnChain(leg);
    if (delivered) throw notOwed(`its message was delivered on ${leg.destinationNetwork} (nonce ${delivered} is used there)`);
    return { settlement: s, leg };
  };

  return {
    /**
     * Abandons the leg, then transfers the gross amount back to the payer once (write-ahead
     * `<settlementId>:bridge-refund`). One mined and reverted (USDC paused, the payer or the revenue
     * wallet blacklisted) is a proven outcome: `RefundReverted`, not retried; the settlement waits
     * for an operator, whose next `abandon-bridge` is `attempt` 1, 2, ...: a record of its own under
     * the same on-chain key, so at most one of them ever pays.
     */
    async refundBridgePayer(input: CrossChainSettleInput, attempt = 0): Promise<BridgeRefund> {
      const { settlement: s, leg } = await owed(input);
      const network = deps.networks.get(s.network as EvmNetworkId);
      if (!network?.usdc) throw ApplicationFailure.nonRetryable(`network ${s.network} has no USDC`, 'RefundNotOwed');
      const signer = deps.signerFor('revenue', network.id);
      // Another worker of this task queue may hold the revenue key: retried until one does (visible on the activity).
      if (!signer) throw ApplicationFailure.retryable('this worker holds no key for the revenue wallet', 'RefundSignerMismatch');
      const key = relayerTxId(s.id, 'bridge-refund');
      const txId = attempt ? relayerTxId(s.id, `bridge-refund-${attempt + 1}`) : key;
      // The source transaction must show the payer's authorization pulling the gross amount; the refund
      // pays that back to that payer (a retry re-sends the recorded transfer, already proven).
      if (!(await signer.find(txId))) {
        const proof = await provenPayment(signer.client, network.usdc as Address, s.transaction!, {
          payer: s.payer,
          nonce: nonceOfId(s.id),
          wallet: s.payer,
        });
        if (!proof || proof.pulled < BigInt(s.amount))
          throw ApplicationFailure.nonRetryable(
            `no refund owed for ${input.workflowId}: its source transaction shows no payment of ${s.amount} by ${s.payer}`,
            'RefundNotOwed',
          );
      }
      const em = deps.db.em.fork();
      await em.nativeUpdate(BridgeTransfer, { id: leg.id }, { state: BRIDGE_ABANDONED, updatedAt: new Date() });
      // A retry finds the write-ahead record and re-sends those bytes, and the transfer is keyed on chain
      // by the settlement: one refund, whoever asks again and whatever is broadcast.
      const hash = await sendTransferOnce(signer, txId, network.usdc as Address, s.payer as Address, BigInt(s.amount), key);
      await em.nativeUpdate(BridgeTransfer, { id: leg.id }, { refundTx: hash, updatedAt: new Date() });
      const receipt = await awaitRecordedReceipt(signer, txId, deps.config.RECEIPT_WAIT_MS);
      if (receipt.status !== 'success') {
        const reason = `the refund ${hash} was mined and reverted; nothing was paid`;
        await em.nativeUpdate(BridgeTransfer, { id: leg.id }, { error: reason, updatedAt: new Date() });
        throw ApplicationFailure.nonRetryable(reason, 'RefundReverted');
      }
      return { payee: s.payer, amount: s.amount, refundTx: hash };
    },

    /**
     * Delivers an abandoned leg's message on its destination to the treasury (BRIDGE_TREASURY_ADDRESS,
     * else the revenue wallet that advanced the refund): `receiveAndPayout` with the treasury as payout
     * and no fee, once (write-ahead `<bridgeId>:treasury`), so the burned USDC does not stay in the
     * bridge. The leg comes from our records (it must be `abandoned`), the message from the source
     * receipt and the attestation service, the treasury from configuration. Until the message can be
     * delivered (no attestation yet, a call that would revert) it fails retryably, visible on the
     * activity; a message already delivered by someone else ends it with nothing sent.
     */
    async deliverAbandonedLeg(input: CrossChainSettleInput): Promise<TreasuryDelivery> {
      const em = deps.db.em.fork();
      const notOwed = (why: string) =>
        ApplicationFailure.nonRetryable(`no treasury delivery for ${input.workflowId}: ${why}`, 'TreasuryDeliveryNotOwed');
      const s = await em.findOne(Settlement, { id: input.workflowId });
      const leg = s?.transaction ? await em.findOne(BridgeTransfer, { settlementId: s.id, sourceTx: s.transaction }) : null;
      if (!s || !leg) throw notOwed('it has no bridge leg of its own');
      if (leg.state !== BRIDGE_ABANDONED) throw notOwed(`its bridge leg is ${leg.state}, not abandoned`);
      const treasury = deps.config.BRIDGE_TREASURY_ADDRESS ?? deps.revenueWallet;
      if (!treasury)
        throw ApplicationFailure.retryable('neither BRIDGE_TREASURY_ADDRESS nor a revenue wallet is configured', 'TreasuryNotConfigured');
      const dst = bridgeOf(leg.destinationNetwork as EvmNetworkId);
      const relayer = deps.relayerFor(dst.id);
      const txId = relayerTxId(leg.id, 'treasury');
      if (!(await relayer.find(txId))) {
        const poll = await attestationOf(leg);
        Context.current().heartbeat();
        if (poll.status !== 'complete') throw ApplicationFailure.retryable('the leg has no complete attestation yet', 'AttestationPending');
        const used = await relayer.client.readContract({
          address: dst.bridgeTransmitter,
          abi: messageTransmitterV2Abi,
          functionName: 'usedNonces',
          args: [poll.nonce],
        });
        if (used !== 0n) {
          const error = `its message was delivered on ${dst.id} by another caller (nonce ${poll.nonce} is used): nothing sent`;
          await em.nativeUpdate(BridgeTransfer, { id: leg.id }, { error, updatedAt: new Date() });
          return { treasury: treasury.toLowerCase(), delivered: false, error };
        }
        const data = encodeFunctionData({
          abi: facilitatorBridgeAbi,
          functionName: 'receiveAndPayout',
          args: [dst.bridgeTransmitter, poll.message, poll.attestation, dst.usdc, treasury as Address, 0n, ZERO_ADDRESS as Address],
        });
        try {
          await relayer.send(txId, { to: dst.facilitator, data });
        } catch (err) {
          const revert = revertOf(err);
          if (!revert) throw err;
          throw ApplicationFailure.retryable(`the treasury delivery would revert: ${revert}`, 'TreasuryDeliveryReverts');
        }
      }
      const receipt = await awaitRecordedReceipt(relayer, txId, deps.config.RECEIPT_WAIT_MS);
      if (receipt.status !== 'success') {
        // Mined and reverted: these bytes can never succeed, and a new delivery is an operator's call.
        const error = `treasury delivery ${receipt.hash} reverted`;
        await em.nativeUpdate(BridgeTransfer, { id: leg.id }, { treasuryTx: receipt.hash, error, updatedAt: new Date() });
        return { treasury: treasury.toLowerCase(), delivered: false, deliveryTx: receipt.hash, error };
      }
      const logs = (await relayer.client.getTransactionReceipt({ hash: receipt.hash })).logs;
      const paid = parseEventLogs({ abi: facilitatorBridgeAbi, logs, eventName: 'BridgePayout' }).find(
        (l) => l.address.toLowerCase() === dst.facilitator.toLowerCase(),
      );
      const received = paid?.args.received.toString() ?? '0';
      await em.nativeUpdate(BridgeTransfer, { id: leg.id }, { treasuryTx: receipt.hash, received, error: null, updatedAt: new Date() });
      return { treasury: treasury.toLowerCase(), delivered: true, amount: received, deliveryTx: receipt.hash };
    },
  };
}

export type BridgeRefundActivities = ReturnType<typeof createBridgeRefundActivities>;
