import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Histogram } from 'prom-client';
import { Metrics } from '../../src/observability/metrics';
import type { Database } from '../../src/db/orm';
import { metricNames } from '../support/promql';

// js-yaml comes with jest (its coverage loader); the tests are its only user here, as with ajv.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- no types installed; only `load` is used
const yaml = require('js-yaml') as { load(text: string): unknown };

/** ops/prometheus/alerts.yml names only metrics (and their labels) that the API's /metrics exports. */

type Rule = { alert: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
const rules = (
  yaml.load(readFileSync(join(__dirname, '..', '..', 'ops', 'prometheus', 'alerts.yml'), 'utf8')) as { groups: { rules: Rule[] }[] }
).groups.flatMap((g) => g.rules);

/** Every metric the API exports, with its labels; a histogram also as _bucket (plus `le`), _sum and _count. */
function exported(): Map<string, Set<string>> {
  const metrics = new Metrics();
  metrics.observeOperations({ db: {} as Database, networks: new Map(), stuck: true });
  const out = new Map<string, Set<string>>();
  for (const m of metrics.registry.getMetricsAsArray()) {
    const labels = new Set((m as unknown as { labelNames: string[] }).labelNames);
    if (m instanceof Histogram) {
      out.set(`${m.name}_bucket`, new Set([...labels, 'le']));
      out.set(`${m.name}_sum`, labels);
      out.set(`${m.name}_count`, labels);
    } else out.set(m.name, labels);
  }
  return out;
}

describe('alert rules', () => {
  test('cover stuck payments, relayer balance and nonces, RPC errors and settle latency', () => {
    const names = rules.map((r) => r.alert);
    expect(names).toEqual(
      expect.arrayContaining([
        'X402StuckPayments',
        'X402GasBudgetExhausted',
        'X402RelayerBalanceLow',
        'X402RelayerNonceStuck',
        'X402RelayerNonceGap',
        'X402RpcErrors',
        'X402SettleSlow',
      ]),
    );
    for (const r of rules) {
      expect(r.expr.length).toBeGreaterThan(0);
      expect(r.labels?.severity).toMatch(/^(page|warn)$/);
      expect(r.annotations?.summary).toBeTruthy();
    }
  });

  test.each(rules.map((r) => [r.alert, r.expr]))('%s names only exported metrics and their labels', (_alert, expr) => {
    const known = exported();
    // Label matchers and grouping clauses name labels; what is left names metrics and functions.
    const matchers = [...expr.matchAll(/(\w+)\{([^}]*)\}/g)].map((m) => ({
      metric: m[1]!,
      labels: [...m[2]!.matchAll(/(\w+)\s*=~?/g)].map((l) => l[1]!),
    }));
    const groupings = [...expr.matchAll(/\b(?:by|without)\s*\(([^)]*)\)/g)].flatMap((m) => m[1]!.split(',').map((l) => l.trim()));
    const identifiers = metricNames(expr);
    expect(identifiers.length).toBeGreaterThan(0);
    for (const name of identifiers) expect({ name, exported: known.has(name) }).toEqual({ name, exported: true });
    const allLabels = new Set(identifiers.flatMap((n) => [...known.get(n)!]));
    for (const l of groupings) expect({ label: l, known: allLabels.has(l) }).toEqual({ label: l, known: true });
    for (const m of matchers)
      for (const l of m.labels)
        expect({ label: l, of: m.metric, known: known.get(m.metric)?.has(l) }).toEqual({ label: l, of: m.metric, known: true });
  });
});
