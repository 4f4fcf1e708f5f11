import { defineUpdate } from '@temporalio/workflow';
import type { TopUpOutcome } from '../src/topup/types';
import type { CrossChainOutcome } from '../src/schemes/eip3009-crosschain/types';
import type { RefundOutcome } from '../src/inference/types';
import type { OperatorAction, OperatorActionName, OperatorDecision } from '../src/temporal/operator-decisions';

export type { OperatorAction, OperatorActionName, OperatorDecision };

/**
 * Operator actions on payments that wait for a human (README "For operators"). Each is a typed
 * Temporal update, defined once here and imported by the workflows (handlers and validators) and by
 * the operator CLI (`ops/cli.ts`), as in Temporal's `early-return` sample. Who decided and why
 * travel with every action: they are logged, recorded on our row and put in the workflow's memo and
 * result. Who decided and the action as recorded are typed in src/temporal/operator-decisions.ts.
 */

/** Top-up in `needs_review`: run the bridge leg again and deposit what arrives on Base. */
export const retryDepositUpdate = defineUpdate<TopUpOutcome, [OperatorDecision]>('retryDeposit');
/** Top-up in `needs_review`: give the payer back on Base what our records say they are owed. */
export const refundTopUpUpdate = defineUpdate<TopUpOutcome, [OperatorDecision]>('refundTopUp');

/**
 * Chat or media refund in `needs_review` (its transaction was mined and reverted): send the refund
 * again, under a record of its own and the same on-chain key (payee and amount from our records).
 */
export const refundChargeUpdate = defineUpdate<RefundOutcome, [OperatorDecision]>('refundCharge');

/** Plain cross-chain settlement in `needs_review`: run its bridge leg again (the mint stays at most once). */
export const retryMintUpdate = defineUpdate<CrossChainOutcome, [OperatorDecision]>('retryBridgeMint');
/**
 * Plain cross-chain settlement in `needs_review`: abandon its bridge leg (never minted to the seller
 * afterwards), refund the payer the gross amount on the source network from the revenue wallet (the
 * update answers then), and deliver the leg's message on the destination to the treasury.
 */
export const abandonBridgeLegUpdate = defineUpdate<CrossChainOutcome, [OperatorDecision]>('abandonBridgeLeg');

/** What a relayer nudge answers: the hash now in flight (or mined) and the write-ahead record's status. */
export interface NudgeResult {
  hash: string;
  status: string;
}
/** Settlement in `submitted`: send the recorded transaction again (same bytes, same hash). */
export const rebroadcastUpdate = defineUpdate<NudgeResult, [OperatorDecision]>('rebroadcastTransaction');
/** Settlement in `submitted`: replace the transaction now (same nonce, fees +12.5%; see Relayer.nudge). */
export const replaceUpdate = defineUpdate<NudgeResult, [OperatorDecision]>('replaceTransaction');

/** Name of the memo field holding every operator action of an execution. */
export const OPERATOR_ACTIONS_MEMO = 'operatorActions';

/** Patch id of the operator actions: histories from before them ended at `needs_review`. */
export const OPERATOR_ACTIONS_PATCH = 'operator-actions-v1';

/** Patch id of the operator actions on a plain cross-chain settlement's leg: before it, such runs ended at `needs_review`. */
export const BRIDGE_OPERATOR_ACTIONS_PATCH = 'bridge-operator-actions-v1';

/** Patch id of an abandoned leg's delivery to the treasury: before it, such runs ended once the payer was refunded. */
export const BRIDGE_ABANDON_TREASURY_PATCH = 'bridge-abandon-treasury-v1';

const MAX_TEXT = 500;

/**
 * The update validators' argument check: an operator and a reason, short non-blank strings. Throws
 * (the update is refused before it enters history) with the message the CLI prints.
 */
export function assertDecision(d: unknown): asserts d is OperatorDecision {
  const text = (v: unknown) => typeof v === 'string' && v.trim().length > 0 && v.length <= MAX_TEXT;
  const o = d as Partial<OperatorDecision> | null;
  if (!o || typeof o !== 'object' || !text(o.operator) || !text(o.reason))
    throw new Error(`an operator action needs a non-empty operator and reason (at most ${MAX_TEXT} characters each)`);
}
