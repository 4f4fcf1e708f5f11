import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { randomBytes } from 'node:crypto';
import { BATCHED_FORWARD_FAILED, BATCHED_REJECTED, type BatchedSettleInput } from '../../src/schemes/batched/types';
import { X402State } from '../../src/temporal/search-attributes';
import { batchedSettlementWorkflow } from '../../workflows/batched-settlement';
import { recorded, upsertedStates } from '../support/activity-calls';
import { useWorkflowTestEnv } from '../support/workflow-env';

/**
 * One batched nanopayment (workflows/batched-settlement.ts) against mocked activities: forwarded
 * once to the upstream gateway; accepted completes with its answer, refused or unreachable fails
 * (recorded) so a later retry may run again.
 */
describe('batchedSettlementWorkflow (mocked activities)', () => {
  const t = useWorkflowTestEnv();
  const PAYER = '0xAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAa';
  const RECIPIENT = '0xBbBbBbBbBbBbBbBbBbBbBbBbBbBbBbBbBbBbBbBb';
  const batchedInput = (): BatchedSettleInput => ({
    workflowId: `batched:base-sepolia:${PAYER}:0x${randomBytes(32).toString('hex')}`,
    organizationId: 'org-1',
    apiKeyId: 'key-1',
    network: 'base-sepolia',
    payer: PAYER,
    amount: '100',
    recipient: RECIPIENT,
    forwarded: { paymentPayload: { x402Version: 2 }, paymentRequirements: { scheme: 'exact' } },
  });
  const base = (i: BatchedSettleInput) => ({
    id: i.workflowId,
    organizationId: 'org-1',
    apiKeyId: 'key-1',
    route: 'batched',
    network: 'base-sepolia',
    payer: PAYER.toLowerCase(),
    recipient: RECIPIENT.toLowerCase(),
    amount: '100',
    fee: '0',
    requestId: null,
  });
  const mocks = (forward: () => unknown) =>
    recorded({ recordSettlement: (_r: unknown) => undefined, forwardBatchedSettle: (_i: BatchedSettleInput) => forward() });
  const run = (m: ReturnType<typeof mocks>, i: BatchedSettleInput) =>
    t.withWorker(m.activities, async (taskQueue) => {
      const handle = await t.env.client.workflow.start(batchedSettlementWorkflow, { taskQueue, workflowId: i.workflowId, args: [i] });
      const result = await handle.result().then(
        (value) => ({ value, error: undefined }),
        (error: unknown) => ({ value: undefined, error }),
      );
      return { ...result, state: (await handle.describe()).typedSearchAttributes.get(X402State), states: await upsertedStates(handle) };
    });
  const records = (m: ReturnType<typeof mocks>) => m.argsOf('recordSettlement').map(([r]) => r);

  test('accepted upstream: forwarded once, completes with the upstream answer, recorded accepted with its transaction', async () => {
    const upstream = { success: true, transaction: 'batch-7', network: 'base-sepolia', payer: PAYER };
    const m = mocks(() => upstream);
    const i = batchedInput();
    const out = await run(m, i);
    expect(out.value).toEqual({ upstream, organizationId: 'org-1' });
    expect(m.argsOf('forwardBatchedSettle')).toEqual([[i]]);
    expect(records(m)).toEqual([
      { ...base(i), state: 'forwarding', transaction: null, errorReason: null, response: null },
      { ...base(i), state: 'accepted', transaction: 'batch-7', errorReason: null, response: JSON.stringify(upstream) },
    ]);
    expect(out.states).toEqual(['forwarding', 'accepted']);
  });

  test('refused upstream: fails BatchedRejected carrying the upstream answer, recorded rejected', async () => {
    const upstream = { success: false, errorReason: 'insufficient_balance' };
    const m = mocks(() => upstream);
    const i = batchedInput();
    const out = await run(m, i);
    expect(out.error).toBeInstanceOf(WorkflowFailedError);
    expect((out.error as WorkflowFailedError).cause).toMatchObject({ type: BATCHED_REJECTED, nonRetryable: true, details: [upstream] });
    expect(m.argsOf('forwardBatchedSettle')).toHaveLength(1);
    expect(records(m)[1]).toEqual({
      ...base(i),
      state: 'rejected',
      transaction: null,
      errorReason: 'insufficient_balance',
      response: JSON.stringify(upstream),
    });
    expect(out.state).toBe('rejected');
  });

  test('upstream unreachable: 3 attempts, then fails BatchedForwardFailed, recorded failed batched_settle_error', async () => {
    const m = mocks(() => {
      throw ApplicationFailure.retryable('connect ECONNREFUSED', 'FetchError');
    });
    const i = batchedInput();
    const out = await run(m, i);
    expect((out.error as WorkflowFailedError).cause).toMatchObject({
      type: BATCHED_FORWARD_FAILED,
      message: 'upstream gateway unreachable: connect ECONNREFUSED',
    });
    expect(m.argsOf('forwardBatchedSettle')).toHaveLength(3);
    expect(records(m)[1]).toEqual({ ...base(i), state: 'failed', transaction: null, errorReason: 'batched_settle_error', response: null });
    expect(out.states).toEqual(['forwarding', 'failed']);
  });

  test('a network without the gateway (gateway_not_enabled): one attempt, failed', async () => {
    const m = mocks(() => {
      throw ApplicationFailure.nonRetryable('unknown network base-sepolia', 'gateway_not_enabled');
    });
    const out = await run(m, batchedInput());
    expect((out.error as WorkflowFailedError).cause).toMatchObject({ type: BATCHED_FORWARD_FAILED });
    expect(m.argsOf('forwardBatchedSettle')).toHaveLength(1);
    expect(out.state).toBe('failed');
  });
});
