import { ApplicationFailure, Context } from '@temporalio/activity';
import { BaseError, ContractFunctionRevertedError, encodeFunctionData, parseEventLogs, type Address, type Hex } from 'viem';
import type { MikroORM } from '@mikro-orm/core';
import type { Config } from '../src/config';
import type { EvmNetworkId, NetworkTable } from '../src/chains/networks';
import { bridgeMessengerAbi, bridgeTransmitterAbi, decodeBurnMessage, facilitatorBridgeAbi } from '../src/chains/evm/bridge';
import { tokenReads } from '../src/schemes/eip3009/reads';
import { verifyExactEvm, type Verification } from '../src/schemes/eip3009/verify';
import type { Relayer } from '../src/chains/evm/relayer';
import { Settlement } from '../src/db/entities';
import { BridgeTransfer } from '../src/db/bridge-transfer';
import { relayerTxId } from '../src/temporal/workflow-ids';
import type { BridgeTransferInput, CrossChainSettleInput } from '../src/schemes/eip3009-crosschain/types';
import type { SettleReason } from '../src/x402/error-reasons';
import type { SettleResponse } from '../src/x402/schemas';

export interface CrossChainActivityDeps {
  config: Pick<Config, 'MIN_VALIDITY_SECONDS' | 'RECEIPT_WAIT_MS' | 'BRIDGE_ATTESTATION_URL'>;
  db: MikroORM;
  networks: NetworkTable;
  relayerFor(network: EvmNetworkId): Relayer;
}

export type BurnSubmitted = { submitted: true; hash: Hex } | { submitted: false; reason: 'invalid_transaction_state'; detail: string };
/** The source receipt: the response the seller gets, and the burn message when it succeeded. */
export type BurnOutcome = { response: SettleResponse; message?: Hex; bridgeNonce?: string };
export type AttestationPoll = { status: 'pending' } | { status: 'complete'; attestation: Hex };
export type MintSubmitted = { submitted: true; hash: Hex } | { submitted: false; error: string };

const crossChainRejection = (input: CrossChainSettleInput, reason: string): SettleResponse => ({
  success: false,
  errorReason: reason,
  transaction: '',
  network: input.network,
  payer: input.paymentPayload.payload.authorization.from,
});

/** A revert found while estimating (nothing signed), or undefined for a transient error. */
const revertOf = (err: unknown): string | undefined => {
  const hit =
    err instanceof BaseError ? err.walk((e) => e instanceof ContractFunctionRevertedError || /revert/i.test((e as Error).message)) : null;
  return hit ? (hit as Error).message.split('\n')[0] : undefined;
};

/**
 * Activities of cross-chain EIP-3009 settlement and its bridge leg. Every one is idempotent: the
 * burn and the mint go through the write-ahead relayer under business-key ids, receipts are read
 * from the recorded hash, and the mint checks the transmitter's used nonce before signing.
 */
export function createCrossChainActivities(deps: CrossChainActivityDeps) {
  const network = (id: EvmNetworkId) => {
    const n = deps.networks.get(id);
    if (!n || !n.facilitator || !n.usdc) throw ApplicationFailure.nonRetryable(`network ${id} is not configured`, 'invalid_network');
    if (!n.bridgeMessenger || !n.bridgeTransmitter)
      throw ApplicationFailure.nonRetryable(`network ${id} has no bridge`, 'cross_chain_not_supported');
    return n as typeof n & { facilitator: Address; usdc: Address; bridgeMessenger: Address; bridgeTransmitter: Address };
  };

  const recordSettlement = async (input: CrossChainSettleInput, state: string, extra: Partial<Settlement> = {}) => {
    const now = new Date();
    const a = input.paymentPayload.payload.authorization;
    await deps.db.em.fork().upsert(
      Settlement,
      {
        id: input.workflowId,
        organizationId: input.organizationId,
        apiKeyId: input.apiKeyId,
        route: input.route,
        network: input.network,
        payer: a.from.toLowerCase(),
        recipient: input.payout.toLowerCase(),
        amount: a.value,
        fee: input.fee,
        requestId: input.requestId ?? null,
        state,
        createdAt: now,
        updatedAt: now,
        ...extra,
      } as Settlement,
      { onConflictExcludeFields: ['createdAt'] },
    );
  };
  const recordRejection = (input: CrossChainSettleInput, reason: SettleReason) =>
    recordSettlement(input, 'rejected', { errorReason: reason, response: JSON.stringify(crossChainRejection(input, reason)) });

  const recordBridge = async (input: BridgeTransferInput, state: string, extra: Partial<BridgeTransfer> = {}) => {
    const now = new Date();
    await deps.db.em.fork().upsert(
      BridgeTransfer,
      {
        id: input.bridgeId,
        settlementId: input.settlementId,
        organizationId: input.organizationId,
        sourceNetwork: input.sourceNetwork,
        destinationNetwork: input.destinationNetwork,
        sourceDomain: input.sourceDomain,
        destinationDomain: input.destinationDomain,
        bridgeNonce: input.bridgeNonce,
        sourceTx: input.sourceTx,
        amount: input.amount,
        recipient: input.payout.toLowerCase(),
        state,
        createdAt: now,
        updatedAt: now,
        ...extra,
      } as BridgeTransfer,
      { onConflictExcludeFields: ['createdAt'] },
    );
  };

  return {
    /** Records the attempt, then every EIP-3009 verification rule on the source chain (no transaction). */
    async verifyCrossChainPayment(input: CrossChainSettleInput): Promise<Verification> {
      await recordSettlement(input, 'verifying', { transaction: null, errorReason: null, response: null });
      const n = network(input.network);
      network(input.destinationNetwork);
      const v = await verifyExactEvm(input.paymentPayload, input.paymentRequirements, n, {
        nowSeconds: Math.floor(Date.now() / 1000),
        minValiditySeconds: deps.config.MIN_VALIDITY_SECONDS,
        reads: tokenReads(n),
      });
      if (!v.isValid) await recordRejection(input, v.invalidReason);
      return v;
    },

    /**
     * Pulls the authorization and burns it toward the destination in one facilitator call, once per
     * workflow (write-ahead relayer record `<workflowId>:burn`); a call that would revert is
     * reported before anything is signed.
     */
    async submitBridgeBurn(input: CrossChainSettleInput): Promise<BurnSubmitted> {
      const src = network(input.network);
      const dst = network(input.destinationNetwork);
      const a = input.paymentPayload.payload.authorization;
      const data = encodeFunctionData({
        abi: facilitatorBridgeAbi,
        functionName: 'settleAndBurn',
        args: [
          input.paymentRequirements.asset as Address,
          a.from as Address,
          BigInt(a.value),
          BigInt(a.validAfter),
          BigInt(a.validBefore),
          a.nonce as Hex,
          input.paymentPayload.payload.signature as Hex,
          {
            messenger: src.bridgeMessenger,
            destinationDomain: input.destinationDomain,
            mintRecipient: dst.facilitator,
            destinationCaller: dst.facilitator,
            maxFee: BigInt(input.maxBridgeFee),
          },
        ],
      });
      let hash: Hex;
      try {
        ({ hash } = await deps.relayerFor(input.network).send(relayerTxId(input.workflowId, 'burn'), { to: src.facilitator, data }));
      } catch (err) {
        const revert = revertOf(err);
        if (!revert) throw err; // transient: Temporal retries
        await recordRejection(input, 'invalid_transaction_state');
        return { submitted: false, reason: 'invalid_transaction_state', detail: revert };
      }
      await recordSettlement(input, 'submitted', { transaction: hash });
      return { submitted: true, hash };
    },

    /**
     * Waits for the burn's receipt and reads the burn message from the messenger's log. Success
     * records the settle response (the source transaction) that this and every repeat answers.
     */
    async awaitBridgeBurn(input: CrossChainSettleInput): Promise<BurnOutcome> {
      const relayer = deps.relayerFor(input.network);
      const tx = await relayer.find(relayerTxId(input.workflowId, 'burn'));
      if (!tx) throw ApplicationFailure.retryable('no recorded burn transaction yet', 'RecordNotFound');
      const receipt = await relayer.waitForReceipt(tx, deps.config.RECEIPT_WAIT_MS, () => Context.current().heartbeat());
      if (!receipt) throw ApplicationFailure.retryable(`no receipt for ${tx.hash} yet`, 'ReceiptTimeout');
      const payer = input.paymentPayload.payload.authorization.from;
      const messenger = network(input.network).bridgeMessenger.toLowerCase();
      const sent = parseEventLogs({ abi: bridgeMessengerAbi, logs: receipt.logs, eventName: 'MessageSent' }).find(
        (l) => l.address.toLowerCase() === messenger,
      );
      if (receipt.status !== 'success' || !sent) {
        const response: SettleResponse = {
          success: false,
          errorReason: 'invalid_transaction_state',
          transaction: '',
          network: input.network,
          payer,
        };
        await recordSettlement(input, 'failed', {
          transaction: tx.hash,
          errorReason: 'invalid_transaction_state',
          response: JSON.stringify(response),
        });
        return { response };
      }
      const response: SettleResponse = { success: true, transaction: tx.hash, network: input.network, payer };
      await recordSettlement(input, 'bridging', { transaction: tx.hash, errorReason: null, response: JSON.stringify(response) });
      return { response, message: sent.args.message, bridgeNonce: decodeBurnMessage(sent.args.message).nonce.toString() };
    },

    /** Final state of the settlement record once the bridge leg ended. */
    async recordCrossChainOutcome(input: CrossChainSettleInput, state: 'settled' | 'needs_review'): Promise<void> {
      await deps.db.em.fork().nativeUpdate(Settlement, { id: input.workflowId }, { state, updatedAt: new Date() });
    },

    async recordBridgeTransfer(
      input: BridgeTransferInput,
      state: string,
      extra: Partial<Pick<BridgeTransfer, 'error'>> = {},
    ): Promise<void> {
      await recordBridge(input, state, extra);
    },

    /**
     * One look at the attestation service (Iris v2 shape) for the burn. Only an attestation for
     * exactly our message counts; 404 (not indexed yet) is pending; other failures retry.
     */
    async fetchBridgeAttestation(input: BridgeTransferInput): Promise<AttestationPoll> {
      const url = `${deps.config.BRIDGE_ATTESTATION_URL.replace(/\/$/, '')}/v2/messages/${input.sourceDomain}?transactionHash=${input.sourceTx}`;
      const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
      if (res.status === 404) return { status: 'pending' };
      if (!res.ok) throw ApplicationFailure.retryable(`attestation service answered ${res.status}`, 'AttestationUnavailable');
      const body = (await res.json()) as { messages?: { message?: string; status?: string; attestation?: string }[] };
      const ours = body.messages?.find((m) => m.message?.toLowerCase() === input.message.toLowerCase());
      if (!ours || ours.status !== 'complete' || !/^0x[0-9a-fA-F]{130}$/.test(ours.attestation ?? '')) return { status: 'pending' };
      return { status: 'complete', attestation: ours.attestation as Hex };
    },

    /**
     * Delivers the message on the destination and pays out in one facilitator call. A recorded
     * transaction is re-sent as is; without one, a nonce the transmitter already marks used means
     * someone else delivered it (needs review: our payout did not happen through this workflow).
     */
    async submitBridgeMint(input: BridgeTransferInput, attestation: Hex): Promise<MintSubmitted> {
      const dst = network(input.destinationNetwork);
      const relayer = deps.relayerFor(input.destinationNetwork);
      const txId = relayerTxId(input.bridgeId, 'mint');
      if (!(await relayer.find(txId))) {
        const used = await relayer.client.readContract({
          address: dst.bridgeTransmitter,
          abi: bridgeTransmitterAbi,
          functionName: 'usedNonces',
          args: [input.sourceDomain, BigInt(input.bridgeNonce)],
        });
        if (used) return { submitted: false, error: 'bridge message already delivered by another caller' };
      }
      const data = encodeFunctionData({
        abi: facilitatorBridgeAbi,
        functionName: 'receiveAndPayout',
        args: [
          dst.bridgeTransmitter,
          input.message as Hex,
          attestation,
          dst.usdc,
          input.payout as Address,
          BigInt(input.fee),
          input.feeRecipient as Address,
        ],
      });
      try {
        const { hash } = await relayer.send(txId, { to: dst.facilitator, data });
        await recordBridge(input, 'minting', { mintTx: hash });
        return { submitted: true, hash };
      } catch (err) {
        const revert = revertOf(err);
        if (!revert) throw err;
        return { submitted: false, error: `mint would revert: ${revert}` };
      }
    },

    /** Waits for the mint's receipt and records what arrived and what was paid. */
    async awaitBridgeMint(
      input: BridgeTransferInput,
    ): Promise<{ ok: boolean; mintTx: string; received?: string; bridgeFee?: string; fee?: string; payoutAmount?: string }> {
      const relayer = deps.relayerFor(input.destinationNetwork);
      const tx = await relayer.find(relayerTxId(input.bridgeId, 'mint'));
      if (!tx) throw ApplicationFailure.retryable('no recorded mint transaction yet', 'RecordNotFound');
      const receipt = await relayer.waitForReceipt(tx, deps.config.RECEIPT_WAIT_MS, () => Context.current().heartbeat());
      if (!receipt) throw ApplicationFailure.retryable(`no receipt for ${tx.hash} yet`, 'ReceiptTimeout');
      const dst = network(input.destinationNetwork);
      const paid = parseEventLogs({ abi: facilitatorBridgeAbi, logs: receipt.logs, eventName: 'BridgePayout' }).find(
        (l) => l.address.toLowerCase() === dst.facilitator.toLowerCase(),
      );
      if (receipt.status !== 'success' || !paid) {
        await recordBridge(input, 'needs_review', { mintTx: tx.hash, error: 'mint transaction reverted' });
        return { ok: false, mintTx: tx.hash };
      }
      const received = paid.args.received;
      const result = {
        received: received.toString(),
        bridgeFee: (BigInt(input.amount) - received).toString(),
        fee: paid.args.fee.toString(),
        payoutAmount: (received - paid.args.fee).toString(),
      };
      await recordBridge(input, 'delivered', { mintTx: tx.hash, ...result, error: null });
      return { ok: true, mintTx: tx.hash, ...result };
    },
  };
}

export type CrossChainActivities = ReturnType<typeof createCrossChainActivities>;
