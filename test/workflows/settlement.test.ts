import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { settlementWorkflow } from '../../workflows/settlement';
import { SETTLEMENT_REJECTED, settlementRejection, type SettleOutcome, type SettlementInput } from '../../src/settle/types';
import { X402State } from '../../src/temporal/search-attributes';
import type { SettleResponse } from '../../src/x402/schemas';
import { startWorkflowTestEnv, type WorkflowTestEnv } from '../support/workflow-env';

/**
 * The settlement skeleton against mocked activities: which activities run, how often, and what the
 * workflow answers for each branch (valid, rejected at verification or submission, transient
 * failures retried, a chain that stays down, a reverted transaction).
 */
const PAYER = '0x1111111111111111111111111111111111111111';
const HASH = `0x${'ab'.repeat(32)}`;
const input = (n: number) =>
  ({
    workflowId: `settle:base-sepolia:${PAYER}:0x${n.toString(16).padStart(64, '0')}`,
    organizationId: 'org-1',
    apiKeyId: 'key-1',
    route: 'eip3009',
    network: 'base-sepolia',
    payer: PAYER,
    amount: '1000',
    payout: PAYER,
    fee: '0',
    feeRecipient: PAYER,
  }) as unknown as SettlementInput;
const rejected = (reason: string): SettleResponse => ({
  success: false,
  errorReason: reason,
  transaction: '',
  network: 'base-sepolia',
  payer: PAYER,
});
const settled: SettleResponse = { success: true, transaction: HASH, network: 'base-sepolia', payer: PAYER };

/** Mock activities that count their calls; each behaviour is a list of answers, the last one repeating. */
function mocks(script: { verify?: (() => unknown)[]; submit?: (() => unknown)[]; confirm?: (() => unknown)[] }) {
  const calls = { verifyPayment: 0, submitPayment: 0, confirmPayment: 0 };
  const play = (name: keyof typeof calls, answers: (() => unknown)[] | undefined, fallback: () => unknown) => async () => {
    const answer = answers?.[Math.min(calls[name], answers.length - 1)] ?? fallback;
    calls[name]++;
    return answer();
  };
  return {
    calls,
    activities: {
      verifyPayment: play('verifyPayment', script.verify, () => ({ isValid: true })),
      submitPayment: play('submitPayment', script.submit, () => ({ submitted: true, transaction: HASH })),
      confirmPayment: play('confirmPayment', script.confirm, () => settled),
      recordSettlement: async () => undefined,
    },
  };
}
const transient = () => {
  throw ApplicationFailure.retryable('rpc down', 'RpcError');
};

describe('settlementWorkflow (mocked activities)', () => {
  let t: WorkflowTestEnv;
  let n = 0;
  beforeAll(async () => {
    t = await startWorkflowTestEnv();
  }, 120_000);
  afterAll(() => t?.close());

  const run = (activities: object) =>
    t.withWorker(activities, async (taskQueue) => {
      const i = input(++n);
      const handle = await t.env.client.workflow.start(settlementWorkflow, { taskQueue, workflowId: i.workflowId, args: [i] });
      const result: { value?: SettleOutcome; error?: unknown } = await handle.result().then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      );
      const state = (await handle.describe()).typedSearchAttributes.get(X402State);
      return { ...result, state };
    });

  test('valid: verify, submit, confirm once each; completes with the response and whose payment it is', async () => {
    const m = mocks({});
    const out = await run(m.activities);
    expect(out).toEqual({ value: { response: settled, organizationId: 'org-1' }, state: 'settled' });
    expect(m.calls).toEqual({ verifyPayment: 1, submitPayment: 1, confirmPayment: 1 });
  });

  test('rejected at verification: fails with SettlementRejected carrying the response; nothing is submitted', async () => {
    const m = mocks({ verify: [() => ({ isValid: false, response: rejected('insufficient_funds') })] });
    const out = await run(m.activities);
    expect(out.error).toBeInstanceOf(WorkflowFailedError);
    expect((out.error as WorkflowFailedError).cause).toMatchObject({ type: SETTLEMENT_REJECTED, nonRetryable: true });
    expect(settlementRejection(out.error)).toEqual({ response: rejected('insufficient_funds') });
    expect(out.state).toBe('rejected');
    expect(m.calls).toEqual({ verifyPayment: 1, submitPayment: 0, confirmPayment: 0 });
  });

  test('a transient verification failure is retried, then the payment settles', async () => {
    const m = mocks({ verify: [transient, transient, () => ({ isValid: true })] });
    const out = await run(m.activities);
    expect(out.value?.response).toEqual(settled);
    expect(m.calls).toEqual({ verifyPayment: 3, submitPayment: 1, confirmPayment: 1 });
  });

  test('a chain that stays down during verification: given up after 5 attempts, nothing submitted, not a rejection', async () => {
    const m = mocks({ verify: [transient] });
    const out = await run(m.activities);
    expect(out.error).toBeInstanceOf(WorkflowFailedError);
    expect(settlementRejection(out.error)).toBeUndefined();
    expect(m.calls).toEqual({ verifyPayment: 5, submitPayment: 0, confirmPayment: 0 });
  });

  test('refused at submission (the call would revert): SettlementRejected, nothing to confirm', async () => {
    const m = mocks({ submit: [() => ({ submitted: false, detail: 'revert', response: rejected('invalid_transaction_state') })] });
    const out = await run(m.activities);
    expect(settlementRejection(out.error)).toEqual({ response: rejected('invalid_transaction_state') });
    expect(out.state).toBe('rejected');
    expect(m.calls).toEqual({ verifyPayment: 1, submitPayment: 1, confirmPayment: 0 });
  });

  test('once money may move, transient failures are retried until the outcome is known', async () => {
    const m = mocks({
      submit: [transient, transient, transient, () => ({ submitted: true, transaction: HASH })],
      confirm: [transient, () => settled],
    });
    const out = await run(m.activities);
    expect(out.value?.response).toEqual(settled);
    expect(m.calls).toEqual({ verifyPayment: 1, submitPayment: 4, confirmPayment: 2 });
  });

  test('a transaction that reverted on chain completes (not fails) with the failed response', async () => {
    const failed = rejected('invalid_transaction_state');
    const m = mocks({ confirm: [() => failed] });
    const out = await run(m.activities);
    expect(out).toEqual({ value: { response: failed, organizationId: 'org-1' }, state: 'failed' });
  });
});
