import { ApplicationFailure } from '@temporalio/activity';
import { encodeFunctionData, isAddressEqual, type Address, type Hex } from 'viem';
import { tokenAbi } from '../src/chains/evm/abi';
import { InferenceCharge, Settlement } from '../src/db/entities';
import { relayerTxId } from '../src/temporal/workflow-ids';
import type { RefundInput } from '../src/inference/types';
import { awaitRecordedReceipt, type ReceiptResult } from '../src/chains/evm/calls';
import type { SettlementActivityDeps } from './settlement';

/** The refund transfer of one refund workflow (its write-ahead record id). */
const refundTxId = (workflowId: string) => relayerTxId(workflowId, 'refund');

/**
 * Activities of the refund workflow (paid chat whose provider failed). Each is idempotent: ledger
 * writes are conditional updates, and the transfer goes through the write-ahead relayer, so a
 * retried or restarted activity re-sends the same signed bytes instead of a second transfer.
 */
export function createRefundActivities(deps: SettlementActivityDeps) {
  const setCharge = async (id: string, fields: Partial<InferenceCharge>, onlyFrom?: string[]) => {
    await deps.db.em
      .fork()
      .nativeUpdate(InferenceCharge, onlyFrom ? { id, state: { $in: onlyFrom } } : { id }, { ...fields, updatedAt: new Date() });
  };

  return {
    /** The ledger says a refund is owed (unless it already moved on to refunded). */
    async markRefundPending(input: RefundInput): Promise<void> {
      await setCharge(input.chargeId, { state: 'refund_pending', error: input.reason.slice(0, 2000) }, ['settling', 'charged']);
    },

    /** The guard's claim: only a charge no API process finished becomes refund_pending (true). */
    async claimStaleCharge(input: RefundInput): Promise<boolean> {
      const n = await deps.db.em
        .fork()
        .nativeUpdate(
          InferenceCharge,
          { id: input.chargeId, state: { $in: ['settling', 'charged'] } },
          { state: 'refund_pending', error: input.reason, updatedAt: new Date() },
        );
      return n === 1;
    },

    /**
     * Whether the charge's settlement moved the money: settled, or final without a transfer.
     * Retried (throws) while the settlement is still in flight.
     */
    async chargeSettlement(input: RefundInput): Promise<{ settled: boolean; transaction: string }> {
      const s = await deps.db.em.fork().findOne(Settlement, { id: input.settlementId });
      if (s?.state === 'settled') return { settled: true, transaction: s.transaction ?? '' };
      if (s && (s.state === 'failed' || s.state === 'rejected')) return { settled: false, transaction: '' };
      throw ApplicationFailure.retryable(`settlement ${input.settlementId} is ${s?.state ?? 'not recorded'} yet`, 'SettlementInFlight');
    },

    /** Transfers the charged amount back from the revenue wallet, once per workflow. */
    async sendRefund(input: RefundInput): Promise<{ hash: Hex }> {
      const relayer = deps.relayerFor(input.network);
      if (!isAddressEqual(relayer.address, input.revenueWallet as Address)) {
        // Another worker of this task queue may own the revenue wallet's key: retried (with back-off)
        // until one does; if none does, the error stays visible on the pending activity for an operator.
        throw ApplicationFailure.retryable(
          `the revenue wallet ${input.revenueWallet} is not this worker's relayer ${relayer.address}`,
          'RefundSignerMismatch',
        );
      }
      const data = encodeFunctionData({ abi: tokenAbi, functionName: 'transfer', args: [input.payer as Address, BigInt(input.amount)] });
      const { hash } = await relayer.send(refundTxId(input.workflowId), { to: input.asset as Address, data });
      await setCharge(input.chargeId, { refundTx: hash });
      return { hash };
    },

    async awaitRefundReceipt(input: RefundInput): Promise<ReceiptResult> {
      return awaitRecordedReceipt(deps.relayerFor(input.network), refundTxId(input.workflowId), deps.config.RECEIPT_WAIT_MS);
    },

    /** Final ledger state of the charge. */
    async recordRefundOutcome(input: { chargeId: string; state: string; refundTx?: string; error?: string }): Promise<void> {
      await setCharge(input.chargeId, {
        state: input.state,
        ...(input.refundTx ? { refundTx: input.refundTx } : {}),
        ...(input.error ? { error: input.error } : {}),
      });
    },
  };
}

export type RefundActivities = ReturnType<typeof createRefundActivities>;
