import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const DASHBOARD_PATH = join(__dirname, '..', '..', 'ops', 'grafana', 'dashboards', 'x402.json');

/** Every PromQL expression of the dashboard: its panels' targets and its query variables. */
export function dashboardExpressions(path = DASHBOARD_PATH): string[] {
  const dashboard = JSON.parse(readFileSync(path, 'utf8'));
  const panels = (dashboard.panels as any[]).flatMap((p) => [p, ...(p.panels ?? [])]);
  const targets = panels.flatMap((p) => (p.targets ?? []).map((t: { expr: string }) => t.expr));
  const variables = (dashboard.templating?.list ?? [])
    .filter((v: any) => v.type === 'query')
    .map((v: any) => variableSelector(typeof v.query === 'string' ? v.query : v.query.query));
  return [...targets, ...variables];
}

/** Grafana's `label_values(<selector>, <label>)` reads the selector's metric; its label is no metric. */
export function variableSelector(query: string): string {
  return query.replace(/^\s*label_values\(\s*(.*?)\s*,\s*\w+\s*\)\s*$/, '$1');
}

/**
 * The metric names a PromQL expression reads: label matchers, ranges, strings and `by (...)` /
 * `without (...)` groupings taken out, what is left that is not a function call, keyword or number.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  const names = new Set<string>();
  for (const m of bare.matchAll(/(?<![\w$.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    if (m[2] || KEYWORDS.has(m[1])) continue; // a function or aggregation
    names.add(m[1]);
  }
  return [...names];
}

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan', 'Inf', 'NaN']);

/** The metric families a Prometheus text exposition declares (`# TYPE name type`). */
export function declaredFamilies(text: string): Map<string, string> {
  const families = new Map<string, string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) families.set(m[1], m[2]);
  return families;
}

/** Whether `name` is exported by a target whose families are `families`: itself, or a histogram/summary's series. */
export function isExported(name: string, families: Map<string, string>): boolean {
  if (families.has(name)) return true;
  const m = /^(.*)_(bucket|sum|count)$/.exec(name);
  if (!m) return false;
  const type = families.get(m[1]);
  return type === 'histogram' || (type === 'summary' && m[2] !== 'bucket');
}

/** The values of the series of `name` whose labels include `labels`, in exposition order. */
export function series(text: string, name: string, labels: Record<string, string> = {}): number[] {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const values: number[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? '').split(/,(?=[a-zA-Z_]+=")/);
    if (want.every((w) => have.includes(w))) values.push(Number(m[3]));
  }
  return values;
}

/** One sample of the Prometheus text exposition, summed over the matching series (0 when none). */
export const sample = (text: string, name: string, labels: Record<string, string> = {}) =>
  series(text, name, labels).reduce((a, b) => a + b, 0);
