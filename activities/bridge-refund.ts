import { ApplicationFailure } from '@temporalio/activity';
import type { Address } from 'viem';
import { awaitRecordedReceipt, recordedSucceeded } from '../src/chains/evm/calls';
import type { EvmNetworkId } from '../src/chains/networks';
import { BRIDGE_ABANDONED, BridgeTransfer } from '../src/db/bridge-transfer';
import { Settlement } from '../src/db/entities';
import { relayerTxId } from '../src/temporal/workflow-ids';
import type { BridgeRefund, CrossChainSettleInput } from '../src/schemes/eip3009-crosschain/types';
import type { CrossChainActivityDeps } from './crosschain';
import type { RoleSigners } from './signers';
import { sendTransferOnce } from './transfer-once';
import { nonceOfId, provenPayment } from '../src/chains/evm/payment-proof';

/** The revenue wallet (the `revenue` signer) advances the refund of an abandoned leg. */
export type BridgeRefundDeps = CrossChainActivityDeps & RoleSigners;

/**
 * An operator's refund of a plain cross-chain settlement whose bridge leg did not deliver
 * (docs/decisions.md "Abandoning a bridge leg"): the payer gets the gross amount back on the source
 * network from the revenue wallet. Who and how much come only from our records; the leg is marked
 * abandoned before anything is signed, so no later run of it mints (submitBridgeMint refuses).
 */
export function createBridgeRefundActivities(deps: BridgeRefundDeps) {
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
  };
}

export type BridgeRefundActivities = ReturnType<typeof createBridgeRefundActivities>;
