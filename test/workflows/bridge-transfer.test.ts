import type { BridgeTransferInput } from '../../src/schemes/eip3009-crosschain/types';
import { X402State } from '../../src/temporal/search-attributes';
import { bridgeTransferWorkflow } from '../../workflows/bridge-transfer';
import { recorded, upsertedStates } from '../support/activity-calls';
import { bridgeTransferInput } from '../support/bridge-input';
import { useWorkflowTestEnv } from '../support/workflow-env';

/**
 * The bridge leg of a cross-chain settlement (workflows/bridge-transfer.ts) against mocked
 * activities, by their names: the attestation polled on durable timers until complete, then one
 * mint of the message the service attested (not the one the input carries); no attestation within
 * the budget, a mint we cannot send, or a reverted mint: `needs_review`, recorded, nothing more sent.
 * The attestation's format is the activities' business: these tests hold across its changes.
 */
describe('bridgeTransferWorkflow (mocked activities)', () => {
  const t = useWorkflowTestEnv();
  const MINT = `0x${'cd'.repeat(32)}`;
  const attested = { message: '0x0a77e57ed', attestation: '0x02', nonce: `0x${'07'.repeat(32)}` };
  const delivered = { ok: true, mintTx: MINT, received: '1998000', bridgeFee: '2000', fee: '20000', payoutAmount: '1978000' };
  const mocks = (script: { pending?: number; mint?: () => unknown; done?: () => unknown } = {}) => {
    let polls = 0;
    return recorded({
      recordBridgeTransfer: (_i: BridgeTransferInput, _state: string, _extra?: unknown) => undefined,
      fetchBridgeAttestation: (_i: BridgeTransferInput) =>
        ++polls > (script.pending ?? 0) ? { status: 'complete', ...attested } : { status: 'pending' },
      submitBridgeMint: (_i: BridgeTransferInput, _a: unknown) => (script.mint ?? (() => ({ submitted: true, hash: MINT })))(),
      awaitBridgeMint: (_i: BridgeTransferInput) => (script.done ?? (() => delivered))(),
    });
  };
  const run = (m: ReturnType<typeof mocks>, i: BridgeTransferInput) =>
    t.withWorker(m.activities, async (taskQueue) => {
      const handle = await t.env.client.workflow.start(bridgeTransferWorkflow, { taskQueue, workflowId: i.bridgeId, args: [i] });
      const value = await handle.result();
      return { value, state: (await handle.describe()).typedSearchAttributes.get(X402State), states: await upsertedStates(handle) };
    });

  test('attestation pending twice, then complete: one mint of the attested message, delivered with the mint receipt', async () => {
    const m = mocks({ pending: 2 });
    const i = bridgeTransferInput();
    const out = await run(m, i);
    const { ok: _ok, ...amounts } = delivered;
    expect(out.value).toEqual({ state: 'delivered', ...amounts });
    expect(m.calls).toEqual([
      { name: 'recordBridgeTransfer', args: [i, 'burned'] },
      { name: 'fetchBridgeAttestation', args: [i] },
      { name: 'fetchBridgeAttestation', args: [i] },
      { name: 'fetchBridgeAttestation', args: [i] },
      { name: 'recordBridgeTransfer', args: [i, 'attested', { bridgeNonce: attested.nonce }] },
      { name: 'submitBridgeMint', args: [i, { status: 'complete', ...attested }] },
      { name: 'awaitBridgeMint', args: [i] },
    ]);
    expect(out.states).toEqual(['attested', 'minting', 'delivered']);
  });

  test('no attestation within the budget: needs_review after polls on durable timers, nothing minted', async () => {
    const m = mocks({ pending: Number.MAX_SAFE_INTEGER });
    const i = bridgeTransferInput({ attestationBudgetMs: 1_000 });
    const out = await run(m, i);
    expect(out.value).toEqual({ state: 'needs_review', error: 'no attestation within the time budget' });
    // Polls after 0, 500 and 1500 ms of timers (500 ms doubling): the third is past the 1 s budget.
    expect(m.names()).toEqual([
      'recordBridgeTransfer',
      'fetchBridgeAttestation',
      'fetchBridgeAttestation',
      'fetchBridgeAttestation',
      'recordBridgeTransfer',
    ]);
    expect(m.argsOf('recordBridgeTransfer').at(-1)).toEqual([i, 'needs_review', { error: 'no attestation within the time budget' }]);
    expect(out.states).toEqual(['needs_review']);
  });

  test('a mint we cannot send (it would revert): needs_review with the reason, no receipt awaited', async () => {
    const m = mocks({ mint: () => ({ submitted: false, error: 'mint would revert: nonce used' }) });
    const i = bridgeTransferInput();
    const out = await run(m, i);
    expect(out.value).toEqual({ state: 'needs_review', error: 'mint would revert: nonce used' });
    expect(m.names()).toEqual([
      'recordBridgeTransfer',
      'fetchBridgeAttestation',
      'recordBridgeTransfer',
      'submitBridgeMint',
      'recordBridgeTransfer',
    ]);
    expect(m.argsOf('recordBridgeTransfer').at(-1)).toEqual([i, 'needs_review', { error: 'mint would revert: nonce used' }]);
    expect(out.states).toEqual(['attested', 'needs_review']);
  });

  test('a mint that reverted on chain: needs_review, minted once', async () => {
    const m = mocks({ done: () => ({ ok: false }) });
    const i = bridgeTransferInput();
    const out = await run(m, i);
    expect(out.value).toEqual({ state: 'needs_review', error: 'mint transaction reverted' });
    expect(m.argsOf('submitBridgeMint')).toHaveLength(1);
    expect(m.argsOf('awaitBridgeMint')).toEqual([[i]]);
    expect(out.states).toEqual(['attested', 'minting', 'needs_review']);
  });
});
