import {
  ApplicationFailure,
  allHandlersFinished,
  condition,
  defineSignal,
  defineUpdate,
  getExternalWorkflowHandle,
  log,
  patched,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { CrossChainActivities } from '../activities/crosschain';
import { type CrossChainOutcome, type CrossChainSettleInput } from '../src/schemes/eip3009-crosschain/types';
import { SETTLEMENT_REJECTED } from '../src/settle/types';
import type { SettleResponse } from '../src/x402/schemas';
import { x402States } from './x402-state';
import { runBridgeLeg } from './bridge-transfer';
import { deliverToTreasury, reviewBridgeLeg, type Reviewed } from './bridge-review';
import { operatorDesk } from './operator-desk';
import { BRIDGE_ABANDON_TREASURY_PATCH, BRIDGE_OPERATOR_ACTIONS_PATCH, abandonBridgeLegUpdate, retryMintUpdate } from './operator-actions';
import type { StateOf } from '../src/temporal/states';

// Verification may give up (nothing sent yet); once money may move, retry until the outcome is known.
const { verifyCrossChainPayment } = proxyActivities<CrossChainActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '5s', maximumAttempts: 5 },
});
const { readBridgeBurnTerms, submitBridgeBurn, recordCrossChainOutcome } = proxyActivities<CrossChainActivities>({
  startToCloseTimeout: '60s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});
const { awaitBridgeBurn } = proxyActivities<CrossChainActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '5s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

/**
 * The burn's terms (finality and maxFee; a fast fee read from the attestation service) are read by an
 * activity before the burn and kept in the history. Runs started before it burn at standard, as then.
 */
export const BURN_TERMS_PATCH = 'bridge-burn-terms-v1';

/** Answers once the source transaction is known (or the payment was refused): the settle response. */
export const sourceTransactionUpdate = defineUpdate<CrossChainOutcome>('sourceTransaction');
/** Tells a parent (the top-up workflow) that the source transaction succeeded and the bridge leg began. */
export const sourceTransactionSignal = defineSignal<[SettleResponse]>('crossChainSourceTransaction');

/**
 * Cross-chain EIP-3009 settlement (spec routing step 4, destination differs from the source):
 * verify on the source, pull the authorization and burn it through the bridge in one transaction,
 * and — once that source transaction has succeeded — answer the API's update (early return, as in
 * Temporal's early-return sample) while the bridge leg continues durably as a child workflow
 * (attestation, mint on the destination, payout). Id `settle:<network>:<payer>:<nonce>`, like the
 * same-chain settlement: one authorization, one settlement. A leg that needs review waits for an
 * operator (`retry-mint`, `abandon-bridge`; workflows/bridge-review.ts) unless a top-up started it.
 */
export async function crossChainSettlementWorkflow(input: CrossChainSettleInput): Promise<CrossChainOutcome> {
  let early: SettleResponse | undefined;
  setHandler(sourceTransactionUpdate, async () => {
    await condition(() => early !== undefined);
    return { response: early!, organizationId: input.organizationId };
  });
  let current: StateOf<'settle'> = 'verifying';
  const move = x402States('settle');
  const state = (s: StateOf<'settle'>) => {
    current = s;
    move(s);
  };
  // Operator actions on a leg that needs review (workflows/bridge-review.ts), only while this plain
  // settlement waits for one; a top-up's leg is decided on its top-up.
  const parent = workflowInfo().parent;
  let reviewing = false;
  const desk = operatorDesk<CrossChainOutcome>(() => {
    const id = workflowInfo().workflowId;
    if (parent) return `settlement ${id} is the bridge leg of ${parent.workflowId}: act on that top-up`;
    if (!reviewing || current !== 'needs_review') return `settlement ${id} is ${current}: an operator action is taken only in needs_review`;
    return undefined;
  });
  desk.offer(retryMintUpdate, 'retry-mint');
  desk.offer(abandonBridgeLegUpdate, 'abandon-bridge');
  // Answer the update before ending, so the API never sees "workflow completed" instead of a response.
  const answer = async (response: SettleResponse) => {
    early = response;
    await condition(allHandlersFinished);
  };
  const reject = async (reason: string): Promise<never> => {
    state('rejected');
    const response: SettleResponse = {
      success: false,
      errorReason: reason,
      transaction: '',
      network: input.network,
      payer: input.paymentPayload.payload.authorization.from,
    };
    await answer(response);
    throw ApplicationFailure.nonRetryable(reason, SETTLEMENT_REJECTED, response);
  };

  const verification = await verifyCrossChainPayment(input);
  if (!verification.isValid) return reject(verification.invalidReason);

  // Read once (the answer is in the history: a replay, or a worker that took over, burns with it).
  const terms = patched(BURN_TERMS_PATCH) ? await readBridgeBurnTerms(input) : undefined;
  if (terms?.fellBack) log.warn('the burn is standard', { reason: terms.fellBack });
  const submitted = terms ? await submitBridgeBurn(input, terms) : await submitBridgeBurn(input);
  if (!submitted.submitted) {
    log.warn('burn would revert', { detail: submitted.detail });
    return reject(submitted.reason);
  }
  state('submitted');

  const burn = await awaitBridgeBurn(input);
  if (!burn.response.success || !burn.message) {
    state('failed');
    await answer(burn.response);
    return { response: burn.response, organizationId: input.organizationId };
  }
  state('bridging');
  early = burn.response; // the API's update returns now; the bridge leg goes on below
  // Started by a parent (the TopUpWorkflow): tell it that the bridge leg began. A parent that is gone
  // must not stop the bridge leg.
  if (parent) {
    await getExternalWorkflowHandle(parent.workflowId, parent.runId)
      .signal(sourceTransactionSignal, burn.response)
      .catch((err) => log.warn('could not signal the parent', { error: String(err) }));
  }

  const leg = { transaction: burn.response.transaction, message: burn.message };
  const result = await runBridgeLeg(input, leg);
  const final = result.state === 'delivered' ? 'settled' : 'needs_review';
  await recordCrossChainOutcome(input, final);
  state(final);
  const outcomeOf = (r: Reviewed): CrossChainOutcome => ({
    response: burn.response,
    organizationId: input.organizationId,
    ...r,
    ...(desk.actions.length ? { operatorActions: [...desk.actions] } : {}),
  });
  let reviewed: Reviewed = { bridge: result };
  // Runs that reached needs_review before operator actions on plain settlements ended here.
  if (final === 'needs_review' && !parent && patched(BRIDGE_OPERATOR_ACTIONS_PATCH)) {
    reviewing = true;
    reviewed = await reviewBridgeLeg(input, leg, result, desk, state, outcomeOf);
  }
  const outcome = outcomeOf(reviewed);
  desk.answer(outcome);
  // An abandoned leg whose payer was refunded: its message is delivered to the treasury, so the burned
  // USDC does not stay in the bridge (retried until it can be; the operator's update answered above).
  if (reviewed.refund && patched(BRIDGE_ABANDON_TREASURY_PATCH)) {
    const treasury = await deliverToTreasury(input);
    await condition(allHandlersFinished);
    return { ...outcome, treasury };
  }
  await condition(allHandlersFinished);
  return outcome;
}
