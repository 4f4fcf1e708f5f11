import { settlementWorkflow } from './settlement';
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  executeChild,
  patched,
  proxyActivities,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { TopUpActivities } from '../activities/topup';
import type { SettleOutcome } from '../src/settle/types';
import type { Eip3009SettleInput } from '../src/schemes/eip3009/types';
import { settlementRejection } from '../src/settle/types';
import { TOPUP_DESTINATION_NETWORK, type TopUpInput, type TopUpOutcome, type TopUpState } from '../src/topup/types';
import { topupReasonForSettle } from '../src/topup/reasons';
import { GAS_PROTECTED_NETWORKS } from '../src/topup/gas-protection';
import { x402SearchAttributes } from '../src/temporal/search-attributes';
import { x402States } from './x402-state';
import { retryBridge, settleAcrossBridge, type BridgedSettlement } from './topup-bridge';
import { OPERATOR_ACTIONS_PATCH, refundTopUpUpdate, retryDepositUpdate } from './operator-actions';
import { operatorDesk } from './operator-desk';
import { confirmOrPark, parkedFor } from './park';

/**
 * Patch id of parking a top-up whose approval or refund was mined and reverted (a proven outcome):
 * before it, the activity retried the same reverted receipt forever.
 */
export const TOPUP_PARK_REVERTED_PATCH = 'topup-park-reverted-v1';

/** The activity's failure of `type` (an ApplicationFailure it threw), if `err` is one. */
function failureOf(err: unknown, type: string): ApplicationFailure | undefined {
  return err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === type ? err.cause : undefined;
}

// Records and reads: quick, retried a few times.
const { recordTopUp, checkSettlementGas } = proxyActivities<TopUpActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '5s' },
});
// Money moves: retried until the outcome is known (every activity is idempotent).
const { ensureMerchantAllowance, submitDeposit, awaitDepositReceipt, refundPayer } = proxyActivities<TopUpActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '10s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

/**
 * One merchant top-up, id `topup:<merchant>:<payer>:<nonce>`: settle the payment through the
 * service's settlement workflow (a child keyed `settle:<network>:<payer>:<nonce>`, so the
 * authorization is still settled at most once whoever asks), then credit the buyer on the merchant
 * contract from the relayer wallet; when the deposit can no longer succeed, refund the delivered
 * amount to the payer. Cross-chain sources settle through the cross-chain settlement instead
 * (`bridging` from the source transaction's success until the fill on Base, workflows/topup-bridge.ts)
 * and deposit what the bridge delivered; a bridge that cannot deliver moves to `needs_review` and
 * waits for an operator: retry the bridge leg and deposit (`retryDepositUpdate`), or refund the payer
 * on Base (`refundTopUpUpdate`), see workflows/operator-actions.ts.
 */
export async function topUpWorkflow(input: TopUpInput): Promise<TopUpOutcome> {
  let current: TopUpState = 'settling';
  const upsertState = x402States('topup');
  const move = async (state: TopUpState, extra: Parameters<typeof recordTopUp>[2] = {}) => {
    current = state;
    upsertState(state);
    await recordTopUp(input, state, extra);
  };
  const fail = async (errorReason: string, error: string): Promise<TopUpOutcome> => {
    await move('failed', { errorReason, error });
    return { state: 'failed', errorReason };
  };

  /**
   * A deposit or refund transaction unproven past `parkAfterMs` (workflows/park.ts): operators see
   * `needs_review` in Temporal, while the record keeps its state and the operator desk stays closed
   * (a refund or a retried deposit must not run beside a transaction still in flight).
   */
  const park = () => upsertState('needs_review');
  // Operator actions: accepted only while the top-up waits in `needs_review` with no action under
  // way (the validator refuses anything else before it enters history). Each update answers with
  // the outcome of its action; a refused refund fails only the update.
  const desk = operatorDesk<TopUpOutcome>(() =>
    current === 'needs_review'
      ? undefined
      : `top-up ${workflowInfo().workflowId} is ${current}: an operator action is taken only in needs_review`,
  );
  desk.offer(retryDepositUpdate, 'retry-deposit');
  desk.offer(refundTopUpUpdate, 'refund');
  /**
   * The refund, under a record of its own per attempt after a proven revert (the same on-chain key:
   * at most one pays). A reverted one is returned, not retried: the caller parks the top-up.
   */
  let refundAttempt = 0;
  const refundOnce = () =>
    refundPayer(input, ...(refundAttempt ? [refundAttempt] : [])).catch((err: unknown): { reverted: string } => {
      const reverted = failureOf(err, 'RefundReverted');
      if (!reverted || !patched(TOPUP_PARK_REVERTED_PATCH)) throw err;
      refundAttempt++;
      return { reverted: reverted.message };
    });
  /** Ends the workflow with `outcome`, answering the operator's update first. */
  const end = async (outcome: TopUpOutcome): Promise<TopUpOutcome> => {
    const done = desk.actions.length ? { ...outcome, operatorActions: [...desk.actions] } : outcome;
    desk.answer(done);
    await condition(allHandlersFinished);
    return done;
  };

  await move('settling');
  if (GAS_PROTECTED_NETWORKS.has(input.network)) {
    const gas = await checkSettlementGas(input);
    if (!gas.broadcast) {
      // Nothing was sent: the workflow fails so the same payment can run again later (reuse policy).
      await move('deferred', { errorReason: gas.reason, error: 'settlement deferred by ethereum gas protection' });
      throw ApplicationFailure.nonRetryable(gas.reason, 'GasProtection');
    }
  }
  let settlementTx: string;
  let fillTx: string | undefined;
  if (input.settle.route === 'eip3009-crosschain') {
    // Cross-chain: burn on the source (`bridging` from its success), mint and payout to the relayer
    // on Base (`fillTx`), then deposit exactly what arrived.
    let bridged: BridgedSettlement = await settleAcrossBridge(input.settle, (burned) =>
      move('bridging', { settlementTx: burned.transaction }),
    );
    switch (bridged.kind) {
      case 'reused':
        return fail('authorization_reused', 'the authorization is being settled by another request');
      case 'rejected':
        return fail(topupReasonForSettle(bridged.reason), `settlement rejected: ${bridged.reason}`);
      case 'reverted':
        return fail('settlement_failed', 'the source transaction reverted');
    }
    while (bridged.kind === 'needs_review') {
      // Burned on the source, not delivered by us: the top-up waits for an operator's decision.
      const review = { settlementTx: bridged.settlementTx, errorReason: 'needs_review', error: bridged.error };
      await move('needs_review', review);
      // Runs that reached needs_review before operator actions existed ended here.
      if (!patched(OPERATOR_ACTIONS_PATCH)) return { state: 'needs_review', errorReason: 'needs_review' };
      const action = await desk.next();
      const by = { operator: action.operator, operatorReason: `${action.action}: ${action.reason}` };
      if (action.action === 'refund') {
        // The buyer sees what happened, not who decided (that is on our row and in the memo).
        const error = `${bridged.error}; refunded to the payer after operator review`;
        const refunding = { ...review, ...by, errorReason: 'deposit_failed', error };
        await move('refunding', refunding);
        const refund = await refundOnce().catch((err: unknown) => {
          const notOwed = failureOf(err, 'RefundNotOwed');
          if (notOwed) return notOwed;
          throw err;
        });
        if (refund instanceof ApplicationFailure || 'reverted' in refund) {
          // Not owed by our records, or mined and reverted: nothing moved; the top-up waits again.
          desk.refuse(refund instanceof ApplicationFailure ? refund.message : refund.reverted);
          continue;
        }
        await move('refunded', { ...refunding, refundTx: refund.hash });
        return end({ state: 'refunded', errorReason: 'deposit_failed' });
      }
      await move('bridging', { settlementTx: bridged.settlementTx, ...by });
      bridged = await retryBridge(input.settle as Extract<TopUpInput['settle'], { route: 'eip3009-crosschain' }>);
      if (bridged.kind === 'reverted') return end(await fail('settlement_failed', 'the source transaction reverted'));
      if (bridged.kind !== 'needs_review' && bridged.kind !== 'delivered') throw new Error(`unexpected bridge outcome ${bridged.kind}`);
      // Still not delivered: the retry answers so, and the top-up waits again.
      if (bridged.kind === 'needs_review') desk.answer({ state: 'needs_review', errorReason: 'needs_review' });
    }
    settlementTx = bridged.settlementTx;
    fillTx = bridged.bridge.mintTx;
    // The record and the deposit use what the bridge really kept and delivered (<= the quote).
    input = { ...input, bridgeFee: bridged.bridge.bridgeFee, netAmount: bridged.bridge.payoutAmount };
  } else {
    // A same-chain settlement delivers on its own chain: only `base` funds a deposit on Base (the
    // gateway never builds another; ethereum stops here after the gas rule).
    if (input.network !== TOPUP_DESTINATION_NETWORK)
      return fail('wrong_network', `${input.network} is not a same-chain source of a top-up on Base`);
    const settled = await settleSameChain(input.settle);
    if (settled.kind === 'reused') return fail('authorization_reused', 'the authorization is being settled by another request');
    if (settled.kind === 'rejected') return fail(topupReasonForSettle(settled.reason), `settlement rejected: ${settled.reason}`);
    if (!settled.outcome.response.success) return fail('settlement_failed', 'the settlement transaction reverted');
    settlementTx = settled.outcome.response.transaction;
  }
  const txs = { settlementTx, ...(fillTx ? { fillTx } : {}) };

  /**
   * A transaction of this top-up mined and reverted (a proven outcome, not an unknown one): the
   * top-up waits in `needs_review` with the reason until an operator decides (operator-actions.ts).
   * `refund` gives the payer back what our records owe (a refund that reverts again waits again);
   * `retry-deposit` returns 'retry' when `canRetry` (the approval reverted: a fresh one is signed),
   * else it is refused (the deposit itself can no longer succeed).
   */
  const review = async (error: string, canRetry: boolean): Promise<TopUpOutcome | 'retry'> => {
    for (;;) {
      desk.answer({ state: 'needs_review', errorReason: 'needs_review' }); // a retry that ended here again
      parkedFor('the top-up', error); // in the same workflow task as the state: never one without the other
      await move('needs_review', { ...txs, errorReason: 'needs_review', error });
      const action = await desk.next();
      const by = { operator: action.operator, operatorReason: `${action.action}: ${action.reason}` };
      if (action.action === 'retry-deposit') {
        if (canRetry) {
          await move('depositing', { ...txs, ...by });
          return 'retry';
        }
        desk.refuse(`the deposit of ${workflowInfo().workflowId} can no longer succeed (${error}): only a refund`);
        continue;
      }
      const refunding = { ...txs, ...by, errorReason: 'deposit_failed', error: `${error}; refunded to the payer after operator review` };
      await move('refunding', refunding);
      const refund = await refundOnce().catch((err: unknown) => {
        const notOwed = failureOf(err, 'RefundNotOwed');
        if (notOwed) return { reverted: notOwed.message };
        throw err;
      });
      if ('reverted' in refund) {
        // Not owed, or mined and reverted: nothing moved; the top-up waits again.
        desk.refuse(refund.reverted);
        error = refund.reverted;
        continue;
      }
      await move('refunded', { ...refunding, refundTx: refund.hash });
      return end({ state: 'refunded', errorReason: 'deposit_failed' });
    }
  };

  await move('depositing', txs);
  for (let approval = 0; ; approval++) {
    const reverted = await ensureMerchantAllowance(input, ...(approval ? [approval] : [])).then(
      () => undefined,
      (err: unknown) => {
        const failure = failureOf(err, 'ApproveReverted');
        if (!failure || !patched(TOPUP_PARK_REVERTED_PATCH)) throw err;
        return failure.message;
      },
    );
    if (reverted === undefined) break;
    const reviewed = await review(`${reverted}; nothing was deposited`, true);
    if (reviewed !== 'retry') return reviewed;
  }
  const submitted = await submitDeposit(input);
  let detail = submitted.submitted ? '' : submitted.detail;
  if (submitted.submitted) {
    const receipt = await confirmOrPark(() => awaitDepositReceipt(input), 'the top-up deposit transaction', input.parkAfterMs, park);
    if (receipt.status === 'success') {
      await move('deposited', { ...txs, depositTx: receipt.hash });
      return end({ state: 'deposited' });
    }
    detail = `deposit ${receipt.hash} reverted`;
  }

  // The deposit can no longer succeed (e.g. a concurrent top-up consumed the credit headroom):
  // the delivered amount goes back to the payer.
  const failed = `deposit failed (${detail})`;
  const error = `${failed}; the delivered amount was refunded to the payer`;
  await move('refunding', { ...txs, errorReason: 'deposit_failed', error });
  const refund = await confirmOrPark(refundOnce, 'the top-up refund transaction', input.parkAfterMs, park);
  if ('reverted' in refund) return (await review(`${failed}; ${refund.reverted}`, false)) as TopUpOutcome; // no retry without canRetry
  await move('refunded', { ...txs, errorReason: 'deposit_failed', error, refundTx: refund.hash });
  return end({ state: 'refunded', errorReason: 'deposit_failed' });
}

/** The same-chain settlement child (`settle:<network>:<payer>:<nonce>`). */
async function settleSameChain(
  settle: Eip3009SettleInput,
): Promise<{ kind: 'settled'; outcome: SettleOutcome } | { kind: 'reused' } | { kind: 'rejected'; reason: string }> {
  try {
    const outcome: SettleOutcome = await executeChild(settlementWorkflow, {
      workflowId: settle.workflowId,
      args: [settle],
      // As the API starts it: a settlement that completed elsewhere (POST /v1/settle) is not run again.
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      typedSearchAttributes: x402SearchAttributes({
        kind: 'settle',
        network: settle.network,
        payer: settle.paymentPayload.payload.authorization.from,
        state: 'verifying',
        organization: settle.organizationId,
      }),
    });
    return { kind: 'settled', outcome };
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return { kind: 'reused' };
    const rejected = settlementRejection(err);
    if (rejected) return { kind: 'rejected', reason: rejected.response?.errorReason ?? 'settlement_failed' };
    throw err;
  }
}
