import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DASHBOARD_PATH } from '../support/promql';

/**
 * docker-compose.yml and ops/ name each other (paths, ports, the datasource uid, the metrics token
 * secret) and Docker cannot run here: these checks keep the names in step.
 */
const ROOT = join(__dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const compose = read('docker-compose.yml');
const prometheus = read('ops/prometheus/prometheus.yml');
const provider = read('ops/grafana/provisioning/dashboards/x402.yml');
const datasource = read('ops/grafana/provisioning/datasources/prometheus.yml');
const dashboard = JSON.parse(readFileSync(DASHBOARD_PATH, 'utf8'));

describe('ops files and docker-compose.yml agree', () => {
  test('Grafana loads the dashboards folder compose mounts, and its datasource uid is the dashboard default', () => {
    const path = /^\s+path: (\S+)$/m.exec(provider)![1];
    expect(compose).toContain(`- ./ops/grafana/dashboards:${path}:ro`);
    expect(compose).toContain('- ./ops/grafana/provisioning:/etc/grafana/provisioning:ro');
    expect(compose).toContain(`GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH: ${path}/x402.json`);
    const uid = /^\s+uid: (\S+)$/m.exec(datasource)![1];
    const variable = dashboard.templating.list.find((v: { type: string }) => v.type === 'datasource');
    expect(variable.current.value).toBe(uid);
    expect(/^\s+url: http:\/\/prometheus:(\d+)$/m.exec(datasource)![1]).toBe('9090');
  });

  test('Prometheus scrapes the API and top-up ports and the worker metrics address of compose, with the token secret', () => {
    const workerPort = /WORKER_METRICS_ADDRESS: 0\.0\.0\.0:(\d+)/.exec(compose)![1];
    expect(prometheus).toContain(`targets: ['worker:${workerPort}']`);
    expect(compose).toContain("PORT: '4021'");
    expect(prometheus).toContain("targets: ['api:4021']");
    const topupPort = /TOPUP_PORT: '(\d+)'/.exec(compose)![1];
    expect(prometheus).toContain(`targets: ['topup:${topupPort}']`);
    // Both apps are given the token their scrape jobs present.
    expect(compose.match(/METRICS_TOKEN: '\$\{METRICS_TOKEN:\?/g)).toHaveLength(2);
    const credentials = [...prometheus.matchAll(/credentials_file: \/run\/secrets\/(\S+)/g)].map((m) => m[1]);
    expect(credentials).toHaveLength(2);
    expect(new Set(credentials).size).toBe(1);
    const secret = credentials[0];
    expect(compose).toMatch(new RegExp(`secrets:\\n  ${secret}:\\n    environment: METRICS_TOKEN`));
    expect(compose).toContain(`- ${secret} #`);
    expect(compose).toContain('- ./ops/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro');
  });

  test('Prometheus loads the alert rules compose mounts', () => {
    const rules = /^rule_files:\n\s+- (\S+)$/m.exec(prometheus)![1];
    expect(compose).toContain(`- ./ops/prometheus/alerts.yml:${rules}:ro`);
  });

  test('every panel target uses the datasource variable; panel ids are unique', () => {
    const panels = (dashboard.panels as any[]).filter((p) => p.type !== 'row');
    const ids = (dashboard.panels as any[]).map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of panels) {
      expect(p.datasource).toEqual({ type: 'prometheus', uid: '${datasource}' });
      for (const t of p.targets) expect(t.datasource).toEqual({ type: 'prometheus', uid: '${datasource}' });
    }
  });
});
