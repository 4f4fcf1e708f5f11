import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * WORKER_METRICS_ADDRESS with port 0 (src/temporal/worker-metrics.ts): the worker picks a free port
 * and, when another process took it before the SDK bound it, picks again, then names the port it
 * serves on. A fixed port stays fixed. Run in a child process: the Temporal runtime is one per
 * process (a failed install leaves none, so both cases run in one child).
 */
const SCRIPT = `
const net = require('node:net');
const { installMetricsRuntime } = require('./src/temporal/worker-metrics');
const listen = () => new Promise((r) => { const s = net.createServer().listen(0, '127.0.0.1', () => r(s)); });
(async () => {
  const taken = await listen();
  const takenPort = taken.address().port;
  const fixed = await installMetricsRuntime('127.0.0.1:' + takenPort).then(() => 'installed', (e) => String(e));
  const picked = [];
  const free = async () => { const s = await listen(); const p = s.address().port; await new Promise((r) => s.close(r)); return p; };
  const address = await installMetricsRuntime('127.0.0.1:0', {
    pickPort: async () => { const p = picked.length === 0 ? takenPort : await free(); picked.push(p); return p; },
  });
  const res = await fetch('http://' + address + '/metrics');
  console.log(JSON.stringify({ fixed, takenPort, picked, address, status: res.status }));
  process.exit(0);
})().catch((e) => { console.error(String(e)); process.exit(1); });
`;

test('port 0: a port taken before the SDK binds it is picked again and the served address returned; a taken fixed port is an error', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', SCRIPT], {
    cwd: join(__dirname, '..', '..'),
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
  const out = JSON.parse(r.stdout.trim().split('\n').at(-1)!);
  expect(out.fixed).toMatch(/Failed to start prometheus metrics exporter: Address already in use/);
  expect(out.picked).toEqual([out.takenPort, expect.any(Number)]);
  expect(out.picked[1]).not.toBe(out.takenPort);
  expect(out.address).toBe(`127.0.0.1:${out.picked[1]}`);
  expect(out.status).toBe(200);
});
