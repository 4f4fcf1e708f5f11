import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertMemo,
  workflowInfo,
} from '@temporalio/workflow';
import type { SettlementActivities } from '../activities/settlement';
import { SETTLEMENT_REJECTED, VERIFY_ATTEMPTS, type SettleOutcome, type SettlementInput } from '../src/settle/types';
import type { SettleResponse } from '../src/x402/schemas';
import type { StateOf } from '../src/temporal/states';
import { x402States } from './x402-state';
import { confirmOrPark } from './park';
import {
  OPERATOR_ACTIONS_MEMO,
  assertDecision,
  rebroadcastUpdate,
  replaceUpdate,
  type OperatorAction,
  type OperatorDecision,
} from './operator-actions';

/** Retry policies of the skeleton, written once for every scheme. */
export const SETTLEMENT_RETRY = {
  // Verification only reads (and records); a chain that stays down rejects the request, nothing was sent.
  verify: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '5s', maximumAttempts: VERIFY_ATTEMPTS },
  // Once money may move, retry until the outcome is known: the activities are idempotent.
  untilKnown: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
} as const;

// Local activities: the whole settlement usually runs inside one workflow task, with no activity
// task round trips (docs/decisions/local-activities.md). Their results reach
// history only when the task completes, so after a crash they run again: verification first asks for
// the write-ahead record (a payment that was signed is never judged again), and submission re-sends the
// recorded bytes. `settlePayment` runs the three steps in one of them (one activation, one marker); it
// counts verification's attempts itself, since once money may move it is retried until the outcome is known.
const { settlePayment } = proxyLocalActivities<SettlementActivities>({ startToCloseTimeout: '2m', retry: SETTLEMENT_RETRY.untilKnown });
// The path of histories written before `settlement-one-local-activity`, and confirmPayment after a fast path that ran out of wait.
const { verifyPayment } = proxyLocalActivities<SettlementActivities>({ startToCloseTimeout: '30s', retry: SETTLEMENT_RETRY.verify });
const { submitPayment } = proxyLocalActivities<SettlementActivities>({ startToCloseTimeout: '60s', retry: SETTLEMENT_RETRY.untilKnown });
const { confirmPayment } = proxyLocalActivities<SettlementActivities>({ startToCloseTimeout: '2m', retry: SETTLEMENT_RETRY.untilKnown });
// An operator's nudge runs beside the confirmation (a normal activity: a worker crash does not lose it,
// and its heartbeat lets a dead worker's attempt be retried within seconds).
const { nudgeSettlementTransaction } = proxyActivities<SettlementActivities>({
  startToCloseTimeout: '60s',
  heartbeatTimeout: '5s',
  retry: { ...SETTLEMENT_RETRY.untilKnown, maximumAttempts: 5, nonRetryableErrorTypes: ['OperatorActionRefused'] },
});

/**
 * The one settlement skeleton, for every scheme (EIP-3009, Permit2, Solana): verify, submit
 * (write-ahead), confirm, in one local activity (`settlePayment`). Its id is the payment's business
 * key (`settle:<network>:<payer>:<nonce>`), so every duplicate request attaches here. A payment
 * rejected before broadcast ends the workflow *failed* (a corrected retry of the same authorization may
 * run again); once a transaction exists, it always completes with the on-chain outcome.
 *
 * The API starts this type. It is `settlementWorkflow` without the `settlement-one-local-activity`
 * patch, whose marker and `TemporalChangeVersion` upsert are two history events and a visibility write
 * in every settlement (docs/decisions/fast-settlement-workflow-type.md). An older worker does
 * not know the type: its task fails and is retried until a worker that does takes it.
 */
export function fastSettlementWorkflow(input: SettlementInput): Promise<SettleOutcome> {
  return settle(input, () => true);
}

/**
 * The skeleton's first type, still started as a child by top-up and media parents (changing their
 * child's type would change their histories). Histories from before the one-local-activity path
 * replay on three local activities.
 */
export function settlementWorkflow(input: SettlementInput): Promise<SettleOutcome> {
  return settle(input, () => patched('settlement-one-local-activity'));
}

/**
 * `oneLocalActivity` is asked where `settlementWorkflow` always called `patched()`: after the handlers
 * are set, since a buffered `markStuck` signal runs its handler (and its own patch) at `setHandler`,
 * and the markers' order is part of the history.
 */
async function settle(input: SettlementInput, oneLocalActivity: () => boolean): Promise<SettleOutcome> {
  let current: StateOf<'settle'> = 'verifying';
  const move = x402States('settle');
  const state = (s: StateOf<'settle'>) => {
    current = s;
    move(s);
  };

  // Operator actions on a transaction that is out but not mined (README "For operators"): accepted
  // only in `submitted`, on an EVM network, one at a time; the confirmation goes on meanwhile.
  const actions: OperatorAction[] = [];
  let nudging = false;
  const validator = (d: OperatorDecision) => {
    assertDecision(d);
    if (current !== 'submitted' && current !== 'needs_review')
      throw new Error(`settlement ${workflowInfo().workflowId} is ${current}: only a submitted transaction is re-sent`);
    if (input.network.startsWith('solana')) throw new Error('a Solana transaction is not re-sent by the relayer');
    if (nudging) throw new Error('another operator action on this settlement is under way');
  };
  const nudge = (how: 'rebroadcast' | 'replace') => async (d: OperatorDecision) => {
    nudging = true;
    const action: OperatorAction = { action: how, operator: d.operator, reason: d.reason, at: new Date().toISOString() };
    actions.push(action);
    log.info('operator action', { ...action });
    upsertMemo({ [OPERATOR_ACTIONS_MEMO]: actions });
    try {
      return await nudgeSettlementTransaction(input, how, d);
    } finally {
      nudging = false;
    }
  };
  setHandler(rebroadcastUpdate, nudge('rebroadcast'), { validator });
  setHandler(replaceUpdate, nudge('replace'), { validator });
  /** The confirmation of a sent transaction; unproven past `parkAfterMs`, the settlement waits in `needs_review` (workflows/park.ts). */
  const confirmed = (): Promise<SettleResponse> =>
    confirmOrPark(
      () => confirmPayment(input),
      'the settlement transaction',
      input.parkAfterMs,
      () => state('needs_review'),
    );
  const reject = (response: SettleResponse): never => {
    state('rejected');
    throw ApplicationFailure.nonRetryable(response.errorReason ?? 'rejected', SETTLEMENT_REJECTED, response);
  };

  let response: SettleResponse;
  if (oneLocalActivity()) {
    // The fast path: one local activity; only a transaction not mined within its wait shows `submitted`.
    const attempt = await settlePayment(input);
    if (attempt.state === 'rejected') {
      if (attempt.at === 'submission') log.warn('settlement refused at submission', { detail: attempt.detail });
      reject(attempt.response);
    }
    if (attempt.state === 'submitted') {
      state('submitted');
      response = await confirmed();
    } else {
      response = attempt.response;
    }
  } else {
    const verification = await verifyPayment(input);
    if (!verification.isValid) reject(verification.response);

    const submitted = await submitPayment(input);
    if (!submitted.submitted) {
      log.warn('settlement refused at submission', { detail: submitted.detail });
      reject(submitted.response);
    }
    state('submitted');
    response = await confirmed();
  }
  state(response.success ? 'settled' : 'failed');
  // Asked first: the SDK records a stack trace for each promise a workflow makes (~25-50 µs of CPU
  // each), and a `condition` makes four even when it holds already, as it does unless an operator acts.
  if (!allHandlersFinished()) await condition(allHandlersFinished);
  return { response, organizationId: input.organizationId };
}
