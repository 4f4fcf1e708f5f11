import { ApplicationFailure, condition, log, setHandler, upsertMemo, workflowInfo } from '@temporalio/workflow';
import type { UpdateDefinition } from '@temporalio/common';
import {
  OPERATOR_ACTIONS_MEMO,
  assertDecision,
  type OperatorAction,
  type OperatorActionName,
  type OperatorDecision,
} from './operator-actions';

/**
 * Where a waiting workflow takes operator decisions, one at a time: each offered update is queued by
 * its handler and answered by the workflow's main loop (`answer`, or `refuse`, which fails only that
 * update with `OperatorActionRefused`). The validator refuses a bad decision, whatever `refusal`
 * names (e.g. the wrong state), or a second action while one is under way, before it enters history.
 */
export interface OperatorDesk<R> {
  /** Every action taken so far (memo `operatorActions`, the workflow's result). */
  readonly actions: readonly OperatorAction[];
  offer(update: UpdateDefinition<R, [OperatorDecision]>, action: OperatorActionName): void;
  /** Waits for the next action, then logs it and puts it in the memo. */
  next(): Promise<OperatorAction>;
  /** Answers the action under way (if any) with the outcome of what the workflow did. */
  answer(outcome: R): void;
  refuse(message: string): void;
}

export function operatorDesk<R>(refusal: () => string | undefined): OperatorDesk<R> {
  const actions: OperatorAction[] = [];
  const answers: ({ outcome: R } | { refused: string })[] = [];
  const pending = () => actions.length > answers.length;
  const validator = (d: OperatorDecision) => {
    assertDecision(d);
    const refused = refusal();
    if (refused) throw new Error(refused);
    if (pending()) throw new Error(`another operator action on ${workflowInfo().workflowId} is under way`);
  };
  const take = (action: OperatorActionName) => async (d: OperatorDecision) => {
    const n = actions.length;
    actions.push({ action, operator: d.operator, reason: d.reason, at: new Date().toISOString() });
    await condition(() => answers.length > n);
    const answer = answers[n];
    if ('refused' in answer) throw ApplicationFailure.nonRetryable(answer.refused, 'OperatorActionRefused');
    return answer.outcome;
  };
  return {
    actions,
    offer: (update, action) => setHandler(update, take(action), { validator }),
    async next() {
      await condition(pending);
      const action = actions[actions.length - 1];
      log.info('operator action', { ...action });
      upsertMemo({ [OPERATOR_ACTIONS_MEMO]: actions });
      return action;
    },
    answer: (outcome) => void (pending() && answers.push({ outcome })),
    refuse: (message) => void (pending() && answers.push({ refused: message })),
  };
}
