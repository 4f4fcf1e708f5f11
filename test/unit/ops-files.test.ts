import { readFileSync } from 'node:fs';
import { join } from 'node:path';
// yaml comes with openapi3-ts (a production dependency); it resolves the compose file's `<<:` merges.
import { parse } from 'yaml';
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

/** The services of docker-compose.yml, merges (`<<: *app`) resolved; environment lists turned into maps. */
interface Service {
  environment?: Record<string, string | null> | string[];
  ports?: string[];
  network_mode?: string;
}
const services = (parse(compose, { merge: true }) as { services: Record<string, Service> }).services;
const envOf = (name: string): Record<string, string | null> => {
  const env = services[name]!.environment ?? {};
  if (!Array.isArray(env)) return env;
  return Object.fromEntries(env.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
};
/** The services that run our code (the x-app anchor). */
const APP_SERVICES = ['api', 'migrate', 'ops', 'topup', 'worker'];

describe('docker-compose.yml keeps the security properties docs/security.md states', () => {
  test('Temporal publishes no port; only the UI (127.0.0.1:8233), the codec server, Prometheus and Grafana (127.0.0.1) and the two apps are published', () => {
    const published = Object.fromEntries(
      Object.entries(services)
        .filter(([, s]) => s.ports !== undefined)
        .map(([name, s]) => [name, s.ports]),
    );
    expect(published).toEqual({
      api: ['4021:4021'],
      topup: ['4022:4022'],
      'temporal-ui': ['127.0.0.1:8233:8080'],
      'codec-server': ['127.0.0.1:8888:8888'],
      prometheus: ['127.0.0.1:9090:9090'],
      grafana: ['127.0.0.1:3000:3000'],
    });
    expect(Object.values(services).filter((s) => s.network_mode !== undefined)).toEqual([]);
    // Precondition: the Temporal server is a service here, reached on the compose network only.
    expect(envOf('temporal').TEMPORAL_ADDRESS).toBe('temporal:7233');
    for (const app of APP_SERVICES) expect(envOf(app).TEMPORAL_ADDRESS).toBe('temporal:7233');
  });

  test('only the worker gets keys, and it must be given all three role keys; every app runs with NODE_ENV=production', () => {
    const keyNames = (name: string) => Object.keys(envOf(name)).filter((v) => /PRIVATE_KEY|FEE_PAYER_KEY/.test(v));
    const holders = Object.keys(services).filter((name) => keyNames(name).length > 0);
    expect(holders).toEqual(['worker']);
    const worker = envOf('worker');
    for (const key of ['RELAYER_PRIVATE_KEY', 'REVENUE_WALLET_PRIVATE_KEY', 'TOPUP_RELAYER_PRIVATE_KEY']) {
      expect(worker[key]).toMatch(new RegExp(`^\\$\\{${key}:\\?`));
    }
    for (const app of APP_SERVICES) expect(envOf(app).NODE_ENV).toBe('production');
  });

  test('the role addresses and shared contract addresses are required (${VAR:?...}) where each process reads them', () => {
    const required = (name: string) =>
      Object.entries(envOf(name))
        .filter(([, v]) => typeof v === 'string' && v.startsWith('${') && v.includes(':?'))
        .map(([k]) => k)
        .sort();
    const shared = [
      'EXACT_PERMIT2_PROXY_ADDRESS',
      'INFERENCE_REVENUE_WALLET',
      'PERMIT2_ADDRESS',
      'RELAYER_ADDRESS',
      'UPTO_PERMIT2_PROXY_ADDRESS',
    ];
    expect(required('api')).toEqual([...shared, 'METRICS_TOKEN', 'PAYLOAD_CODEC_KEYS', 'SESSION_SECRET'].sort());
    expect(required('worker')).toEqual(
      [
        ...shared,
        'PAYLOAD_CODEC_KEYS',
        'RELAYER_PRIVATE_KEY',
        'REVENUE_WALLET_PRIVATE_KEY',
        'TOPUP_DEPOSITOR_CONTRACT',
        'TOPUP_RELAYER_ADDRESS',
        'TOPUP_RELAYER_PRIVATE_KEY',
      ].sort(),
    );
    expect(required('topup')).toEqual(
      [
        ...shared,
        'METRICS_TOKEN',
        'PAYLOAD_CODEC_KEYS',
        'TOPUP_DEPOSITOR_CONTRACT',
        'TOPUP_FEE_FIXED',
        'TOPUP_FEE_RECIPIENT',
        'TOPUP_MERCHANT_CONTRACT',
        'TOPUP_MIN_AMOUNT',
        'TOPUP_RELAYER_ADDRESS',
      ].sort(),
    );
    expect(required('ops')).toEqual([...shared, 'PAYLOAD_CODEC_KEYS'].sort());
    expect(required('codec-server')).toEqual(['CODEC_SERVER_TOKEN', 'PAYLOAD_CODEC_KEYS']);
  });

  // docs/security.md "Forged workflows": the codec key, the read-only UI, the codec server.
  test('the UI cannot write (no start, signal or terminate) and reads through the codec server; the codec key goes only to what talks to Temporal', () => {
    const ui = envOf('temporal-ui');
    expect(ui.TEMPORAL_DISABLE_WRITE_ACTIONS).toBe('true');
    expect(ui.TEMPORAL_CODEC_ENDPOINT).toBe('${TEMPORAL_CODEC_ENDPOINT:-http://127.0.0.1:8888}');
    const holders = Object.keys(services).filter((name) => 'PAYLOAD_CODEC_KEYS' in envOf(name));
    expect(holders.sort()).toEqual(['api', 'codec-server', 'ops', 'topup', 'worker']);
    for (const name of holders) expect(envOf(name).PAYLOAD_CODEC_KEYS).toMatch(/^\$\{PAYLOAD_CODEC_KEYS:\?/);
    // The codec server never seals (it would forge workflow input) and needs its token.
    expect(envOf('codec-server').CODEC_SERVER_ENCODE).toBeUndefined();
    expect(envOf('codec-server').CODEC_SERVER_TOKEN).toMatch(/^\$\{CODEC_SERVER_TOKEN:\?/);
    // Separate Temporal identities are documented for every caller.
    for (const role of ['api, topup', 'worker', 'ops']) expect(compose).toMatch(new RegExp(`#   ${role} +\\S`));
  });

  // docs/security.md "Docker Compose": "Variables that are not set are never passed as empty strings".
  test('no app variable defaults to an empty string when it is not set (a bare name passes it only when set)', () => {
    const emptyDefaults = APP_SERVICES.flatMap((name) =>
      Object.entries(envOf(name))
        .filter(([, v]) => v === '' || (typeof v === 'string' && /^\$\{\w+:-\}$/.test(v)))
        .map(([k]) => `${name}.${k}`),
    );
    expect(emptyDefaults).toEqual([]);
  });
});
