import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { randomBytes } from 'node:crypto';
import { PERMIT_REJECTED, type PermitInput } from '../../src/permit/types';
import { X402State } from '../../src/temporal/search-attributes';
import { permitWorkflow } from '../../workflows/permit';
import { recorded, upsertedStates } from '../support/activity-calls';
import { useWorkflowTestEnv } from '../support/workflow-env';

/**
 * One EIP-2612 permit (workflows/permit.ts) against mocked activities: rejected before broadcast the
 * workflow fails (nothing sent, a corrected retry may run); once a transaction exists it completes
 * with the on-chain outcome. The record (route `permit`) carries the signed owner, recipient and value.
 */
describe('permitWorkflow (mocked activities)', () => {
  const t = useWorkflowTestEnv();
  const HASH = `0x${'41'.repeat(32)}`;
  const OWNER = '0xAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAa';
  const RECIPIENT = '0xBbBbBbBbBbBbBbBbBbBbBbBbBbBbBbBbBbBbBbBb';
  const permitInput = (): PermitInput => ({
    workflowId: `permit:base-sepolia:0x${'cc'.repeat(20)}:${OWNER}:0x${randomBytes(32).toString('hex')}`,
    requestId: 'req-p',
    organizationId: 'org-1',
    apiKeyId: 'key-1',
    network: 'base-sepolia',
    token: `0x${'cc'.repeat(20)}`,
    owner: OWNER,
    spender: `0x${'dd'.repeat(20)}`,
    recipient: RECIPIENT,
    value: '2500000',
    deadline: '9999999999',
    v: 27,
    r: `0x${'01'.repeat(32)}`,
    s: `0x${'02'.repeat(32)}`,
  });
  const base = (i: PermitInput) => ({
    id: i.workflowId,
    organizationId: 'org-1',
    apiKeyId: 'key-1',
    route: 'permit',
    network: 'base-sepolia',
    payer: OWNER.toLowerCase(),
    recipient: RECIPIENT.toLowerCase(),
    amount: '2500000',
    fee: '0',
    requestId: 'req-p',
  });
  const whose = { organizationId: 'org-1', recipient: RECIPIENT.toLowerCase(), value: '2500000' };
  const mocks = (script: { verify?: () => unknown; submit?: () => unknown; receipt?: () => unknown } = {}) =>
    recorded({
      recordSettlement: (_r: unknown) => undefined,
      verifyPermit: (_i: PermitInput) => (script.verify ?? (() => ({ ok: true })))(),
      submitPermit: (_i: PermitInput) => (script.submit ?? (() => ({ submitted: true, hash: HASH })))(),
      awaitPermitReceipt: (_a: unknown) => (script.receipt ?? (() => ({ status: 'success', blockNumber: '12' })))(),
    });
  const run = (m: ReturnType<typeof mocks>, i: PermitInput) =>
    t.withWorker(m.activities, async (taskQueue) => {
      const handle = await t.env.client.workflow.start(permitWorkflow, { taskQueue, workflowId: i.workflowId, args: [i] });
      const result = await handle.result().then(
        (value) => ({ value, error: undefined }),
        (error: unknown) => ({ value: undefined, error }),
      );
      return { ...result, state: (await handle.describe()).typedSearchAttributes.get(X402State), states: await upsertedStates(handle) };
    });
  const records = (m: ReturnType<typeof mocks>) => m.argsOf('recordSettlement').map(([r]) => r as Record<string, unknown>);

  test('valid: verified, one transferWithPermit, its receipt; executed with whose permit it was', async () => {
    const m = mocks();
    const i = permitInput();
    const out = await run(m, i);
    const response = { success: true, transaction: HASH, network: 'base-sepolia' };
    expect(out.value).toEqual({ ...whose, response });
    expect(m.names()).toEqual([
      'recordSettlement',
      'verifyPermit',
      'submitPermit',
      'recordSettlement',
      'awaitPermitReceipt',
      'recordSettlement',
    ]);
    expect(m.argsOf('verifyPermit')).toEqual([[i]]);
    expect(m.argsOf('submitPermit')).toEqual([[i]]);
    expect(m.argsOf('awaitPermitReceipt')).toEqual([[{ network: 'base-sepolia', workflowId: i.workflowId }]]);
    expect(records(m)).toEqual([
      { ...base(i), state: 'verifying', transaction: null, errorReason: null, response: null },
      { ...base(i), state: 'submitted', transaction: HASH },
      { ...base(i), state: 'executed', transaction: HASH, errorReason: null, response: JSON.stringify(response) },
    ]);
    expect(out.states).toEqual(['verifying', 'submitted', 'executed']);
  });

  test('refused by verification: fails PermitRejected with the answer and whose it was; nothing submitted', async () => {
    const m = mocks({ verify: () => ({ ok: false, reason: 'invalid_permit_signature', message: 'bad signature' }) });
    const i = permitInput();
    const out = await run(m, i);
    const response = {
      success: false,
      errorReason: 'invalid_permit_signature',
      transaction: '',
      network: 'base-sepolia',
      message: 'bad signature',
    };
    expect(out.error).toBeInstanceOf(WorkflowFailedError);
    expect((out.error as WorkflowFailedError).cause).toMatchObject({
      type: PERMIT_REJECTED,
      nonRetryable: true,
      details: [response, whose],
    });
    expect(m.names()).toEqual(['recordSettlement', 'verifyPermit', 'recordSettlement']);
    expect(records(m)[1]).toEqual({
      ...base(i),
      state: 'rejected',
      errorReason: 'invalid_permit_signature',
      response: JSON.stringify(response),
    });
    expect(out.state).toBe('rejected');
  });

  test.concurrent('a chain that stays down during verification: 5 attempts, then rejected; nothing submitted', async () => {
    const m = mocks({
      verify: () => {
        throw ApplicationFailure.retryable('rpc down', 'RpcError');
      },
    });
    const out = await run(m, permitInput());
    expect((out.error as WorkflowFailedError).cause).toMatchObject({
      type: PERMIT_REJECTED,
      message: 'could not read the token on base-sepolia: rpc down',
    });
    expect(m.argsOf('verifyPermit')).toHaveLength(5);
    expect(m.argsOf('submitPermit')).toHaveLength(0);
    expect(out.state).toBe('rejected');
  });

  test('refused at submission (the call would revert): rejected, no receipt awaited', async () => {
    const m = mocks({ submit: () => ({ submitted: false, detail: 'transferWithPermit would revert: expired' }) });
    const out = await run(m, permitInput());
    expect((out.error as WorkflowFailedError).cause).toMatchObject({
      type: PERMIT_REJECTED,
      message: 'transferWithPermit would revert: expired',
    });
    expect(m.names()).toEqual(['recordSettlement', 'verifyPermit', 'submitPermit', 'recordSettlement']);
    expect(out.states).toEqual(['verifying', 'rejected']);
  });

  test('a transaction that reverted on chain: completes (not fails) failed, with its hash and block', async () => {
    const m = mocks({ receipt: () => ({ status: 'reverted', blockNumber: '77' }) });
    const i = permitInput();
    const out = await run(m, i);
    const response = {
      success: false,
      errorReason: 'permit_execution_failed',
      transaction: '',
      network: 'base-sepolia',
      message: `transferWithPermit reverted in transaction ${HASH} (block 77)`,
    };
    expect(out.value).toEqual({ ...whose, response });
    expect(m.argsOf('submitPermit')).toHaveLength(1);
    expect(records(m).at(-1)).toEqual({
      ...base(i),
      state: 'failed',
      transaction: HASH,
      errorReason: 'permit_execution_failed',
      response: JSON.stringify(response),
    });
    expect(out.states).toEqual(['verifying', 'submitted', 'failed']);
  });
});
