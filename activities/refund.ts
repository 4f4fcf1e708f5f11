import { ApplicationFailure } from '@temporalio/activity';
import type { Address, Hex } from 'viem';
import { InferenceCharge, Settlement } from '../src/db/entities';
import { MediaJob } from '../src/db/media';
import { relayerTxId } from '../src/temporal/workflow-ids';
import { CHARGE_ALIVE_MS, INFERENCE_ORGANIZATION_ID, refundWorkflowId, type RefundInput } from '../src/inference/types';
import type { EvmNetworkId } from '../src/chains/networks';
import { awaitRecordedReceipt, type ReceiptResult } from '../src/chains/evm/calls';
import type { SettlementActivityDeps } from './settlement';
import type { RoleSigners } from './signers';
import { sendTransferOnce } from './transfer-once';
import { nonceOfId, provenPayment } from '../src/chains/evm/payment-proof';

/**
 * The refund transfer of one charge (its write-ahead record id). Derived from the charge, not from
 * the workflow that asks: however many workflows ask (the refund, its guard, one started by hand),
 * a charge is paid back at most once.
 */
const refundTxId = (chargeId: string) => relayerTxId(refundWorkflowId(chargeId), 'refund');

/**
 * Activities of the refund workflow (paid chat whose provider failed). Each is idempotent: ledger
 * writes are conditional updates, and the transfer goes through the write-ahead relayer, so a
 * retried or restarted activity re-sends the same signed bytes instead of a second transfer.
 */
export function createRefundActivities(deps: SettlementActivityDeps & RoleSigners) {
  /** The revenue wallet's signer (REVENUE_WALLET_PRIVATE_KEY), when this worker holds it: the only key a refund signs with. */
  const revenueSigner = (network: EvmNetworkId) => {
    const signer = deps.signerFor('revenue', network);
    if (!signer) {
      // Another worker of this task queue may own the revenue wallet's key: retried (with back-off)
      // until one does; if none does, the error stays visible on the pending activity for an operator.
      throw ApplicationFailure.retryable(`this worker holds no key for the revenue wallet on ${network}`, 'RefundSignerMismatch');
    }
    return signer;
  };

  /**
   * The charge and its own settlement, from our records. A settlement counts for a charge only when it
   * is the charge's settlement, made for the paid service (INFERENCE_ORGANIZATION_ID), by the same
   * payer for the same amount: a payment settled for a seller, or attached to from another purpose,
   * is not ours to give back.
   */
  const chargeAndSettlement = async (chargeId: string) => {
    const em = deps.db.em.fork();
    const charge = await em.findOne(InferenceCharge, { id: chargeId });
    if (!charge) return { charge: null, settlement: null };
    const s = await em.findOne(Settlement, { id: charge.settlementId });
    const ours =
      s !== null &&
      s.organizationId === INFERENCE_ORGANIZATION_ID &&
      s.network === charge.network &&
      s.payer.toLowerCase() === charge.payer.toLowerCase() &&
      s.amount === charge.amount;
    return { charge, settlement: ours ? s : null, foreign: s !== null && !ours };
  };

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

    /**
     * The guard's claim: only a charge no API process finished becomes refund_pending (true). A
     * `charged` row its API process touched within CHARGE_ALIVE_MS is a stream still being read: the
     * claim is retried (with back-off) until the stream ends or its process stops touching it.
     */
    async claimStaleCharge(input: RefundInput): Promise<boolean> {
      const em = deps.db.em.fork();
      const alive = new Date(Date.now() - CHARGE_ALIVE_MS);
      const n = await em.nativeUpdate(
        InferenceCharge,
        { id: input.chargeId, $or: [{ state: 'settling' }, { state: 'charged', updatedAt: { $lt: alive } }] },
        { state: 'refund_pending', error: input.reason, updatedAt: new Date() },
      );
      if (n === 1) return true;
      const charge = await em.findOne(InferenceCharge, { id: input.chargeId });
      if (charge?.state === 'charged')
        throw ApplicationFailure.retryable(`charge ${input.chargeId} is still streaming`, 'ChargeStreamAlive');
      return false;
    },

    /**
     * Whether the charge's settlement moved the money: settled, or final without a transfer.
     * Retried (throws) while the settlement is still in flight.
     */
    async chargeSettlement(input: RefundInput): Promise<{ settled: boolean; transaction: string }> {
      const { charge, settlement: s, foreign } = await chargeAndSettlement(input.chargeId);
      // No such charge, or its authorization settled someone else's payment: nothing of ours to give back.
      if (!charge || foreign) return { settled: false, transaction: '' };
      if (s?.state === 'settled') return { settled: true, transaction: s.transaction ?? '' };
      if (s && (s.state === 'failed' || s.state === 'rejected')) return { settled: false, transaction: '' };
      throw ApplicationFailure.retryable(`settlement ${charge.settlementId} is ${s?.state ?? 'not recorded'} yet`, 'SettlementInFlight');
    },

    /**
     * Transfers the charged amount back from the revenue wallet, once per charge. Who is paid and how
     * much come from the charge row and the settlement transaction's receipt, never from the workflow
     * input (anyone who can reach Temporal can start a workflow): the receipt must show the charge's
     * authorization used, and at least the charged amount moved from the payer and into the revenue
     * wallet. Without that proof nothing is signed (`RefundNotOwed`, not retried).
     */
    async sendRefund(input: RefundInput): Promise<{ hash: Hex }> {
      const notOwed = (why: string) =>
        ApplicationFailure.nonRetryable(`charge ${input.chargeId} is not owed a refund: ${why}`, 'RefundNotOwed');
      const { charge, settlement } = await chargeAndSettlement(input.chargeId);
      if (!charge || !settlement?.transaction || settlement.state !== 'settled' || charge.state !== 'refund_pending')
        throw notOwed('no settled payment of it');
      const network = deps.networks.get(charge.network as EvmNetworkId);
      if (!network?.usdc || charge.network !== input.network) throw notOwed(`it is on ${charge.network}`);
      // A media charge is owed only once its job failed or was cancelled (the job workflow records that first).
      const jobId = charge.requestId?.startsWith('media:') ? charge.requestId.slice('media:'.length) : undefined;
      if (jobId) {
        const job = await deps.db.em.fork().findOne(MediaJob, { id: jobId });
        if (job?.state !== 'failed' && job?.state !== 'cancelled') throw notOwed(`its media job is ${job?.state ?? 'not recorded'}`);
      }
      const relayer = revenueSigner(network.id);
      const amount = BigInt(charge.amount);
      // A retry finds the write-ahead record and re-sends those bytes; the transfer carries the
      // charge's key on chain, so no second transaction of it can pay again.
      const recorded = await relayer.find(refundTxId(charge.id));
      if (!recorded) {
        const proof = await provenPayment(relayer.client, network.usdc as Address, settlement.transaction, {
          payer: charge.payer,
          nonce: nonceOfId(charge.id),
          wallet: relayer.address,
        });
        if (!proof) throw notOwed(`its settlement ${settlement.transaction} shows no payment of its authorization`);
        if (proof.pulled < amount || proof.paid < amount)
          throw notOwed(`its settlement moved ${proof.pulled} from the payer and ${proof.paid} to the revenue wallet, less than ${amount}`);
      }
      const hash = await sendTransferOnce(relayer, refundTxId(charge.id), network.usdc as Address, charge.payer as Address, amount);
      await setCharge(input.chargeId, { refundTx: hash });
      return { hash };
    },

    async awaitRefundReceipt(input: RefundInput): Promise<ReceiptResult> {
      // Waiting reads the recorded transaction and re-broadcasts its bytes: no key is needed.
      return awaitRecordedReceipt(deps.relayerFor(input.network), refundTxId(input.chargeId), deps.config.RECEIPT_WAIT_MS);
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
