import { randomBytes } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { X402Stuck } from '../../src/temporal/search-attributes';
import { bridgeTransferWorkflow } from '../../workflows/bridge-transfer';
import { stuckScanWorkflow } from '../../workflows/stuck-scan';
import { markStuckSignal } from '../../workflows/x402-state';
import { recorded, untilState, upsertedStates } from '../support/activity-calls';
import { bridgeTransferInput } from '../support/bridge-input';
import { useWorkflowTestEnv } from '../support/workflow-env';

/**
 * The stuck scan (workflows/stuck-scan.ts) against a mocked scan: one scan per run, its counts the
 * result, a failing scan given up after 3 attempts (the next minute's replaces it). The mark itself
 * (x402States' `markStuck` handler): a waiting workflow the scan signals shows `X402Stuck=true`
 * until its next move.
 */
describe('stuckScanWorkflow (mocked activities)', () => {
  const t = useWorkflowTestEnv();
  const counts = [{ kind: 'settle', state: 'submitted', network: 'base-sepolia', count: 2 }];

  test('one scan: its counts are the result', async () => {
    const m = recorded({ scanStuckPayments: () => counts });
    const out = await t.withWorker(m.activities, (taskQueue) =>
      t.env.client.workflow.execute(stuckScanWorkflow, { taskQueue, workflowId: `x402-stuck-scan-test-${randomBytes(4).toString('hex')}` }),
    );
    expect(out).toEqual(counts);
    expect(m.calls).toEqual([{ name: 'scanStuckPayments', args: [] }]);
  });

  test('a scan that keeps failing: 3 attempts, then the run fails', async () => {
    const m = recorded({
      scanStuckPayments: () => {
        throw ApplicationFailure.retryable('visibility unavailable', 'Unavailable');
      },
    });
    const err = await t
      .withWorker(m.activities, (taskQueue) =>
        t.env.client.workflow.execute(stuckScanWorkflow, {
          taskQueue,
          workflowId: `x402-stuck-scan-test-${randomBytes(4).toString('hex')}`,
        }),
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(m.names()).toEqual(['scanStuckPayments', 'scanStuckPayments', 'scanStuckPayments']);
  });

  test('a workflow the scan signals shows X402Stuck=true while it waits; its next move clears the mark', async () => {
    let release!: () => void;
    const attested = new Promise<void>((r) => (release = r));
    setTimeout(release, 90_000).unref(); // never keeps the worker from shutting down
    const i = bridgeTransferInput({ message: '0x01', amount: '1', fee: '0' });
    const activities = {
      recordBridgeTransfer: async () => undefined,
      fetchBridgeAttestation: async () => (await attested, { status: 'complete', message: '0x01', attestation: '0x02', nonce: '0x07' }),
      submitBridgeMint: async () => ({ submitted: true, hash: `0x${'cd'.repeat(32)}` }),
      awaitBridgeMint: async () => ({ ok: true, mintTx: '0x', received: '1', bridgeFee: '0', fee: '0', payoutAmount: '1' }),
    };
    await t.withWorker(activities, async (taskQueue) => {
      const handle = await t.env.client.workflow.start(bridgeTransferWorkflow, { taskQueue, workflowId: i.bridgeId, args: [i] });
      await handle.signal(markStuckSignal);
      await handle.signal(markStuckSignal); // a second scan's mark adds nothing
      let stuck: boolean | undefined;
      for (let k = 0; k < 300 && !stuck; k++) {
        stuck = (await handle.describe()).typedSearchAttributes.get(X402Stuck);
        if (!stuck) await new Promise((r) => setTimeout(r, 100));
      }
      expect(stuck).toBe(true);
      release();
      expect(await untilState(handle, 'delivered')).toBe('delivered');
      await handle.result();
      expect((await handle.describe()).typedSearchAttributes.get(X402Stuck)).toBeUndefined();
      // The mark once (the second signal upserted nothing); the move to attested clears it in the same upsert.
      expect(await upsertedStates(handle)).toEqual(['X402Stuck=true', 'attested', 'X402Stuck=null', 'minting', 'delivered']);
    });
  });
});
