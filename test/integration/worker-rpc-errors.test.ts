import type { Hex } from 'viem';
import { findFreePort, waitUntil } from '../../devnet/process';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { TEST_ACCOUNTS } from '../support/accounts';
import { declaredFamilies, series } from '../support/promql';
import { reportedMetricsUrl } from '../support/services';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';

/**
 * The worker's x402_rpc_errors_total on its metrics endpoint (WORKER_METRICS_ADDRESS, next to the
 * Temporal SDK's series): a worker whose base-sepolia RPC URL is dead counts its settlement
 * activity's failed calls under that network, and none under the networks that answer. With the
 * RPC back, the retried settlement pays exactly once.
 */
describe('worker RPC errors', () => {
  let h: SettleHarness;
  let metricsUrl: string;
  const scrape = async () => (await fetch(metricsUrl)).text();

  beforeAll(async () => {
    // Each worker (the test restarts it) names the free port it bound.
    h = await startSettleHarness('sqlite', {
      relayerIndex: 2,
      env: { WORKER_METRICS_ADDRESS: '127.0.0.1:0', SETTLE_WAIT_MS: '300' },
      onWorkerLine: (line) => (metricsUrl = reportedMetricsUrl(line) ?? metricsUrl),
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  test('a dead RPC URL is counted by network while the activity retries; the settlement then pays once', async () => {
    const deadRpc = `http://127.0.0.1:${await findFreePort()}`;
    await h.restartWorker({ env: { RPC_URLS_BASE_SEPOLIA: deadRpc } });
    const before = series(await scrape(), 'x402_rpc_errors_total', { network: 'base-sepolia' });

    const body = await h.pay(TEST_ACCOUNTS.buyers[2], { value: 1_000_000n });
    const auth = body.paymentPayload.payload.authorization;
    const first = await h.settle(body);
    expect({ status: first.status, reason: first.body.errorReason }).toEqual({ status: 202, reason: 'settlement_pending' });

    const text = await waitUntil(
      'the worker to count failed base-sepolia RPC calls',
      async () => {
        const t = await scrape();
        return (series(t, 'x402_rpc_errors_total', { network: 'base-sepolia' })[0] ?? 0) > (before[0] ?? 0) ? t : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(declaredFamilies(text).get('x402_rpc_errors_total')).toBe('counter');
    const increase = series(text, 'x402_rpc_errors_total', { network: 'base-sepolia' })[0]! - (before[0] ?? 0);
    expect(increase).toBeGreaterThan(0);
    // Every series is labelled by network, and only the dead one has failed.
    const labelled = text.split('\n').filter((l) => l.startsWith('x402_rpc_errors_total'));
    expect(labelled).toEqual([expect.stringMatching(/^x402_rpc_errors_total\{network="base-sepolia"\} \d+$/)]);
    // The SDK's own series are still there: one endpoint, one scrape job.
    expect(declaredFamilies(text).has('temporal_request')).toBe(true);

    // The RPC answers again (the harness environment): the retried activity settles, exactly once.
    await h.restartWorker();
    const final = await h.settleUntilFinal(body);
    expect(final.status).toBe(200);
    expect(final.body).toMatchObject({ success: true, network: 'base-sepolia' });
    expect(await h.settledEvents(auth.from, auth.nonce as Hex)).toBe(1);
    const handle = h.temporal.workflow.getHandle(settleWorkflowId('base-sepolia', auth.from, auth.nonce));
    expect((await handle.describe()).status.name).toBe('COMPLETED');
  });
});
