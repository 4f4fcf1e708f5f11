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
 * The write-ahead record of one attempt of a charge's refund: the first is `refundTxId`; an operator's
 * refund after a proven revert (workflows/refund.ts) is attempt 1, 2, ... under a record of its own.
 * Every attempt carries the same on-chain key (`refundTxId`), so at most one of them ever pays.
 */
const refundAttemptId = (chargeId: string, attempt = 0) =>
  attempt ? relayerTxId(refundWorkflowId(chargeId), `refund-${attempt + 1}`) : refundTxId(chargeId);

/**
 * What the API records on a chat charge when the failure was ours or the provider's, never the
 * buyer's (src/api/routes/inference.ts, src/inference/chat-payment.ts): `provider_failed` (the
 * provider failed before or during the reply) and `unserved` (the settlement outlasted the wait and
 * nothing was served). Only these start a refund; a charge that was delivered, that the client left
 * (`client_closed`) or that still streams (`charged`) is not owed one, whoever starts the workflow.
 */
export const CHAT_REFUND_PROOFS = ['provider_failed', 'unserved'];

/** Charge states at or past the refund's own start (a retried activity finds the row moved on). */
const REFUND_STARTED = ['refund_pending', 'needs_review', 'refunded', 'refund_failed'];

/** `RefundNotOwed`, not retried: nothing is signed for this charge. */
const notOwedError = (chargeId: string, why: string) =>
  ApplicationFailure.nonRetryable(`charge ${chargeId} is not owed a refund: ${why}`, 'RefundNotOwed');

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
    /**
     * The ledger says a refund is owed, only with proof from our own records (a forged or replayed
     * workflow brings none): a chat charge the API recorded as `provider_failed` or `unserved`
     * (CHAT_REFUND_PROOFS), or a media charge whose job failed or was cancelled (the job workflow
     * records that first). Anything else is `RefundNotOwed` (not retried): nothing moves, and the
     * reason is the workflow's failure. A charge that does not exist is left to `chargeSettlement`
     * (not charged).
     */
    async markRefundPending(input: RefundInput): Promise<void> {
      const charge = await deps.db.em.fork().findOne(InferenceCharge, { id: input.chargeId });
      if (!charge || REFUND_STARTED.includes(charge.state)) return;
      const jobId = charge.requestId?.startsWith('media:') ? charge.requestId.slice('media:'.length) : undefined;
      let from: string[];
      if (jobId) {
        const job = await deps.db.em.fork().findOne(MediaJob, { id: jobId });
        if (job?.state !== 'failed' && job?.state !== 'cancelled')
          throw notOwedError(input.chargeId, `its media job is ${job?.state ?? 'not recorded'}`);
        from = ['settling', 'charged'];
      } else from = CHAT_REFUND_PROOFS;
      await setCharge(input.chargeId, { state: 'refund_pending', error: input.reason.slice(0, 2000) }, from);
      const now = await deps.db.em.fork().findOne(InferenceCharge, { id: input.chargeId });
      if (!now || !REFUND_STARTED.includes(now.state))
        throw notOwedError(input.chargeId, `our records show no failure on the provider's side (the charge is ${now?.state ?? 'gone'})`);
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
        {
          id: input.chargeId,
          // A recorded failure too: its API process may have died before starting the refund.
          $or: [{ state: { $in: ['settling', ...CHAT_REFUND_PROOFS] } }, { state: 'charged', updatedAt: { $lt: alive } }],
        },
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
    async sendRefund(input: RefundInput, attempt = 0): Promise<{ hash: Hex }> {
      const notOwed = (why: string) => notOwedError(input.chargeId, why);
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
      const txId = refundAttemptId(charge.id, attempt);
      const recorded = await relayer.find(txId);
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
      const hash = await sendTransferOnce(relayer, txId, network.usdc as Address, charge.payer as Address, amount, refundTxId(charge.id));
      await setCharge(input.chargeId, { refundTx: hash });
      return { hash };
    },

    async awaitRefundReceipt(input: RefundInput, attempt = 0): Promise<ReceiptResult> {
      // Waiting reads the recorded transaction and re-broadcasts its bytes: no key is needed.
      return awaitRecordedReceipt(deps.relayerFor(input.network), refundAttemptId(input.chargeId, attempt), deps.config.RECEIPT_WAIT_MS);
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
