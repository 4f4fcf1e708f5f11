import { dashboardExpressions, declaredFamilies, isExported, metricNames, variableSelector } from '../support/promql';

/** The metric-name extraction the dashboard check (test/integration/dashboard-metrics.test.ts) relies on. */
describe('metric names of PromQL expressions', () => {
  test.each([
    ['sum by (outcome) (rate(x402_settlements_total{network=~"$network"}[$__rate_interval]))', ['x402_settlements_total']],
    [
      'histogram_quantile(0.95, sum by (le, route, result) (rate(x402_settle_duration_seconds_bucket{network=~"a|b"}[5m])))',
      ['x402_settle_duration_seconds_bucket'],
    ],
    ['x402_relayer_balance_ether{network=~"$network"}', ['x402_relayer_balance_ether']],
    ['rate(a_total[1m]) / on (job) group_left (x) b_info', ['a_total', 'b_info']],
    ['sum without (instance) (up) > bool 0 or vector(1)', ['up']],
    [variableSelector('label_values(x402_settlements_total{route="x"}, network)'), ['x402_settlements_total']],
  ])('%s', (expr, names) => {
    expect(metricNames(expr)).toEqual(names);
  });

  test('histogram and summary series count as their family; other suffixes do not', () => {
    const families = declaredFamilies('# TYPE h histogram\n# TYPE s summary\n# TYPE c counter\n# TYPE g gauge\n');
    expect(['h_bucket', 'h_sum', 'h_count', 's_sum', 's_count', 'c', 'g'].map((n) => isExported(n, families))).toEqual(Array(7).fill(true));
    expect(['s_bucket', 'c_bucket', 'g_sum', 'x'].map((n) => isExported(n, families))).toEqual([false, false, false, false]);
  });

  test('the dashboard has expressions, each reading at least one metric', () => {
    const exprs = dashboardExpressions();
    expect(exprs.length).toBeGreaterThan(10);
    for (const e of exprs) expect(metricNames(e).length).toBeGreaterThan(0);
  });
});
