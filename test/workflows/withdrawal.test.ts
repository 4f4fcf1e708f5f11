import { randomBytes } from 'node:crypto';
import type { WithdrawalInput } from '../../src/gateway/withdrawal-types';
import { X402State } from '../../src/temporal/search-attributes';
import { withdrawalWorkflow } from '../../workflows/withdrawal';
import { recorded, upsertedStates } from '../support/activity-calls';
import { useWorkflowTestEnv } from '../support/workflow-env';

/**
 * A gateway-wallet withdrawal (workflows/withdrawal.ts) against mocked activities: initiate once,
 * wait on durable timers until the chain reaches the withdrawal block (re-read each poll), withdraw
 * once; a refused or reverted step ends failed with nothing more sent; the run a long wait continues
 * as new into (input `resume`) does not initiate again. The 500 polls that trigger continue-as-new
 * are not run here: on a local server without time skipping they take minutes. Parking an unproven
 * step: parking.test.ts.
 */
describe('withdrawalWorkflow (mocked activities)', () => {
  const t = useWorkflowTestEnv();
  const INIT = `0x${'51'.repeat(32)}`;
  const WITHDRAW = `0x${'52'.repeat(32)}`;
  const DEPOSITOR = '0xAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAaAa';
  const withdrawalInput = (extra: Partial<WithdrawalInput> = {}): WithdrawalInput => ({
    workflowId: `withdraw:base-sepolia:${randomBytes(8).toString('hex')}`,
    organizationId: 'org-1',
    apiKeyId: 'key-1',
    network: 'base-sepolia',
    gatewayWallet: `0x${'61'.repeat(20)}`,
    token: `0x${'62'.repeat(20)}`,
    depositor: DEPOSITOR,
    amount: '1000000',
    pollMs: 50,
    ...extra,
  });
  type Answer = () => unknown;
  /** `blocks`: the block numbers successive reads see (the last repeats); `withdrawalBlock` likewise. */
  const mocks = (
    script: {
      blocks?: number[];
      withdrawalBlocks?: number[];
      initiate?: Answer;
      withdraw?: Answer[];
      receipt?: (step: string) => unknown;
    } = {},
  ) => {
    let reads = 0;
    let withdraws = 0;
    const pick = <T>(list: T[] | undefined, k: number, fallback: T) => (list ? list[Math.min(k, list.length - 1)]! : fallback);
    return recorded({
      recordSettlement: (_r: Record<string, unknown>) => undefined,
      initiateGatewayWithdrawal: (_i: WithdrawalInput) => (script.initiate ?? (() => ({ submitted: true, hash: INIT })))(),
      readWithdrawalBlock: (_i: WithdrawalInput) => {
        const k = reads++;
        return {
          withdrawalBlock: String(pick(script.withdrawalBlocks, k, 10)),
          blockNumber: String(pick(script.blocks, k, 10)),
          withdrawalDelay: '5',
        };
      },
      withdrawFromGateway: (_i: WithdrawalInput) => pick(script.withdraw, withdraws++, () => ({ submitted: true, hash: WITHDRAW }))(),
      awaitWithdrawalReceipt: (a: { step: string }) => (script.receipt ?? (() => ({ status: 'success' })))(a.step),
    });
  };
  const run = (m: ReturnType<typeof mocks>, i: WithdrawalInput) =>
    t.withWorker(m.activities, async (taskQueue) => {
      const handle = await t.env.client.workflow.start(withdrawalWorkflow, { taskQueue, workflowId: i.workflowId, args: [i] });
      const value = await handle.result();
      return { value, handle, state: (await handle.describe()).typedSearchAttributes.get(X402State), states: await upsertedStates(handle) };
    });
  const records = (m: ReturnType<typeof mocks>) => m.argsOf('recordSettlement').map(([r]) => r as Record<string, unknown>);
  const recordOf = (i: WithdrawalInput) => ({
    id: i.workflowId,
    network: 'base-sepolia',
    gatewayWallet: i.gatewayWallet,
    token: i.token,
    depositor: DEPOSITOR,
    amount: '1000000',
  });

  test('waits until the withdrawal block on timers, then withdraws once to the depositor; recorded at each step', async () => {
    const m = mocks({ blocks: [8, 9, 10] });
    const i = withdrawalInput({ requestId: 'req-w' });
    const out = await run(m, i);
    const final = {
      ...recordOf(i),
      state: 'withdrawn',
      initiateTransaction: INIT,
      withdrawalDelayBlocks: '5',
      withdrawalBlock: '10',
      withdrawTransaction: WITHDRAW,
      errorReason: null,
      message: null,
    };
    expect(out.value).toEqual(final);
    expect(m.names()).toEqual([
      'recordSettlement',
      'initiateGatewayWithdrawal',
      'recordSettlement',
      'awaitWithdrawalReceipt',
      'readWithdrawalBlock',
      'recordSettlement',
      'readWithdrawalBlock', // after a timer: block 9
      'readWithdrawalBlock', // after a timer: block 10
      'recordSettlement',
      'withdrawFromGateway',
      'recordSettlement',
      'awaitWithdrawalReceipt',
      'recordSettlement',
    ]);
    expect(m.argsOf('initiateGatewayWithdrawal')).toEqual([[i]]);
    expect(m.argsOf('withdrawFromGateway')).toEqual([[i]]);
    expect(m.argsOf('awaitWithdrawalReceipt')).toEqual([
      [{ network: 'base-sepolia', workflowId: i.workflowId, step: 'initiate' }],
      [{ network: 'base-sepolia', workflowId: i.workflowId, step: 'withdraw' }],
    ]);
    // The settlements row: the depositor pays itself, the amount as signed by the API, the latest transaction.
    const rows = records(m);
    expect(rows.map((r) => [r.state, r.transaction])).toEqual([
      ['initiating', null],
      ['initiating', INIT],
      ['waiting', INIT],
      ['withdrawing', INIT],
      ['withdrawing', WITHDRAW],
      ['withdrawn', WITHDRAW],
    ]);
    expect(rows.at(-1)).toEqual({
      id: i.workflowId,
      organizationId: 'org-1',
      apiKeyId: 'key-1',
      route: 'withdrawal',
      network: 'base-sepolia',
      payer: DEPOSITOR.toLowerCase(),
      recipient: DEPOSITOR.toLowerCase(),
      amount: '1000000',
      fee: '0',
      requestId: 'req-w',
      state: 'withdrawn',
      transaction: WITHDRAW,
      errorReason: null,
      response: JSON.stringify(final),
    });
    expect(out.states).toEqual(['initiating', 'initiating', 'waiting', 'withdrawing', 'withdrawing', 'withdrawn']);
  });

  test('initiation refused (it would revert): failed withdrawal_rejected, nothing waited for or withdrawn', async () => {
    const m = mocks({ initiate: () => ({ submitted: false, detail: 'no available balance' }) });
    const out = await run(m, withdrawalInput());
    expect(out.value).toMatchObject({
      state: 'failed',
      errorReason: 'withdrawal_rejected',
      message: 'no available balance',
      initiateTransaction: null,
    });
    expect(m.names()).toEqual(['recordSettlement', 'initiateGatewayWithdrawal', 'recordSettlement']);
    expect(out.states).toEqual(['initiating', 'failed']);
  });

  test('initiation reverted on chain: failed withdrawal_rejected with its hash, nothing withdrawn', async () => {
    const m = mocks({ receipt: () => ({ status: 'reverted' }) });
    const out = await run(m, withdrawalInput());
    expect(out.value).toMatchObject({
      state: 'failed',
      errorReason: 'withdrawal_rejected',
      message: `initiateWithdrawal reverted in ${INIT}`,
    });
    expect(m.argsOf('readWithdrawalBlock')).toHaveLength(0);
    expect(m.argsOf('withdrawFromGateway')).toHaveLength(0);
  });

  test('withdraw not ready (a later initiation moved the block): waits again for the new block, then withdraws once', async () => {
    const m = mocks({
      withdrawalBlocks: [10, 12],
      blocks: [10, 11, 12],
      withdraw: [() => ({ submitted: false, reason: 'not_ready', detail: 'not yet' }), () => ({ submitted: true, hash: WITHDRAW })],
    });
    const out = await run(m, withdrawalInput());
    expect(out.value).toMatchObject({ state: 'withdrawn', withdrawalBlock: '12', withdrawTransaction: WITHDRAW });
    expect(m.argsOf('withdrawFromGateway')).toHaveLength(2);
    expect(m.argsOf('awaitWithdrawalReceipt').map(([a]) => (a as { step: string }).step)).toEqual(['initiate', 'withdraw']);
    expect(out.states).toEqual([
      'initiating',
      'initiating',
      'waiting',
      'withdrawing',
      'waiting',
      'withdrawing',
      'withdrawing',
      'withdrawn',
    ]);
  });

  test('withdraw refused: failed withdrawal_failed; reverted: failed with its hash; sent once each', async () => {
    const refused = mocks({ withdraw: [() => ({ submitted: false, reason: 'reverted', detail: 'nothing to withdraw' })] });
    expect((await run(refused, withdrawalInput())).value).toMatchObject({
      state: 'failed',
      errorReason: 'withdrawal_failed',
      message: 'nothing to withdraw',
      withdrawTransaction: null,
    });
    expect(refused.argsOf('withdrawFromGateway')).toHaveLength(1);

    const reverted = mocks({ receipt: (step) => ({ status: step === 'withdraw' ? 'reverted' : 'success' }) });
    const out = await run(reverted, withdrawalInput());
    expect(out.value).toMatchObject({ state: 'failed', errorReason: 'withdrawal_failed', message: `withdraw reverted in ${WITHDRAW}` });
    expect(reverted.argsOf('withdrawFromGateway')).toHaveLength(1);
    expect(out.state).toBe('failed');
  });

  test('a resumed run (after continue-as-new) does not initiate again: it waits and withdraws', async () => {
    const m = mocks({ blocks: [9, 10] });
    const i = withdrawalInput({ resume: { initiateTransaction: INIT } });
    const out = await run(m, i);
    expect(out.value).toMatchObject({ state: 'withdrawn', initiateTransaction: INIT, withdrawTransaction: WITHDRAW });
    expect(m.argsOf('initiateGatewayWithdrawal')).toHaveLength(0);
    expect(m.names()).toEqual([
      'readWithdrawalBlock',
      'recordSettlement',
      'readWithdrawalBlock',
      'recordSettlement',
      'withdrawFromGateway',
      'recordSettlement',
      'awaitWithdrawalReceipt',
      'recordSettlement',
    ]);
  });
});
