import type { Hex } from 'viem';
import { waitUntil } from '../../devnet/process';
import { TEST_ACCOUNTS } from '../support/accounts';
import { request } from '../support/http';
import { dashboardExpressions, declaredFamilies, isExported, metricNames } from '../support/promql';
import { reportedMetricsUrl } from '../support/services';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';

/**
 * The Grafana dashboard (ops/grafana/dashboards/x402.json) without a screenshot: every metric its
 * PromQL reads is really exported, by the API's /metrics or by the worker's Temporal SDK endpoint
 * (WORKER_METRICS_ADDRESS), on the real stack after one settle.
 */

describe('dashboard metrics are exported', () => {
  let h: SettleHarness;
  let workerMetrics: string;

  beforeAll(async () => {
    h = await startSettleHarness('sqlite', {
      relayerIndex: 3,
      env: { WORKER_METRICS_ADDRESS: '127.0.0.1:0' },
      onWorkerLine: (line) => (workerMetrics = reportedMetricsUrl(line) ?? workerMetrics),
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  test('every metric name in the dashboard PromQL is declared by the API or the worker after one settle', async () => {
    const body = await h.pay(TEST_ACCOUNTS.buyers[3], { value: 1_000_000n });
    const res = await h.settle(body);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, network: 'base-sepolia' });
    expect(res.body.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(
      await h.settledEvents(body.paymentPayload.payload.authorization.from, body.paymentPayload.payload.authorization.nonce as Hex),
    ).toBe(1);

    const api = await request('GET', `${h.api.baseUrl}/metrics`);
    expect(api.status).toBe(200);
    const apiFamilies = declaredFamilies(api.body as string);
    // The SDK exports its histograms once a task of each kind has run and its counters are flushed.
    const workerFamilies = await waitUntil(
      'the worker SDK metrics of a completed workflow task',
      async () => {
        const text = await (await fetch(workerMetrics)).text();
        const families = declaredFamilies(text);
        return families.has('temporal_workflow_task_execution_latency_seconds') &&
          families.has('temporal_workflow_endtoend_latency_seconds')
          ? families
          : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 250 },
    );

    const names = [...new Set(dashboardExpressions().flatMap(metricNames))].sort();
    expect(names.length).toBeGreaterThan(8);
    const missing = names.filter((n) => !isExported(n, apiFamilies) && !isExported(n, workerFamilies));
    expect(missing).toEqual([]);
    // Both sources are really used: the API's x402_* and the worker's temporal_* families.
    expect(names.filter((n) => n.startsWith('x402_') && isExported(n, apiFamilies)).length).toBeGreaterThan(3);
    expect(names.filter((n) => n.startsWith('temporal_') && isExported(n, workerFamilies)).length).toBeGreaterThan(2);
  });
});
