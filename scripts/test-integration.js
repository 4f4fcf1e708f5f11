#!/usr/bin/env node
/**
 * `npm run test:integration`: the integration project in TEST_SHARDS shards (default 2) side by side,
 * each a Jest of its own with its own stack (Temporal, chains, doubles: test/support/global-setup.ts),
 * its suites one at a time. The split is test/support/shard-sequencer.js. Each line is prefixed with its
 * shard; the exit code is the first failing shard's. `TEST_SHARDS=1` runs the project as one Jest.
 * The service is transpiled once first (scripts/compile-service.js): the workers, APIs and ops CLIs the
 * tests spawn load it from SERVICE_DIST_DIR, not through tsx.
 */
const { spawn } = require('node:child_process');
const { existsSync, mkdtempSync, readFileSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { compileService } = require('./compile-service');

const shards = Number(process.env.TEST_SHARDS ?? 2);
const extra = process.argv.slice(2);
const jest = join(__dirname, '..', 'node_modules', 'jest', 'bin', 'jest.js');

function run(index) {
  // --no-allocation-site-pretenuring: avoids a Node 20 V8 garbage-collector abort (docs/decisions/node20-test-runner.md).
  const args = ['--no-allocation-site-pretenuring', jest, '--selectProjects', 'integration', '--runInBand'];
  if (shards > 1) args.push(`--shard=${index}/${shards}`);
  const child = spawn(process.execPath, [...args, ...extra], { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
  const prefix = shards > 1 ? `[shard ${index}/${shards}] ` : '';
  for (const [stream, out] of [
    [child.stdout, process.stdout],
    [child.stderr, process.stderr],
  ]) {
    let buffered = '';
    stream.on('data', (chunk) => {
      const lines = (buffered + chunk.toString()).split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) out.write(`${prefix}${line}\n`);
    });
    stream.on('end', () => buffered && out.write(`${prefix}${buffered}\n`));
  }
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
}

const distDir = mkdtempSync(join(tmpdir(), 'x402-service-'));
const compileStarted = Date.now();
const compiled = compileService(distDir);
console.log(`[integration] ${compiled} service files transpiled in ${Date.now() - compileStarted} ms`);
process.env.SERVICE_DIST_DIR = distDir;
process.env.SPAWN_TIMES_FILE = join(distDir, 'spawn-times.txt');
process.on('exit', () => rmSync(distDir, { recursive: true, force: true }));

/** Spawn-to-answer times of the processes the tests started (test/support/services.ts recordSpawnTime). */
function spawnSummary() {
  const file = process.env.SPAWN_TIMES_FILE;
  const byKind = new Map();
  for (const line of existsSync(file) ? readFileSync(file, 'utf8').split('\n') : []) {
    const [kind, ms] = line.split(' ');
    if (kind) byKind.set(kind, [...(byKind.get(kind) ?? []), Number(ms)]);
  }
  for (const [kind, times] of byKind) {
    const sorted = times.sort((a, b) => a - b);
    const total = sorted.reduce((a, b) => a + b, 0);
    const p50 = sorted[Math.floor(sorted.length / 2)];
    console.log(
      `[integration] ${kind} spawned ${sorted.length}x: p50 ${p50} ms, max ${sorted.at(-1)} ms, total ${(total / 1000).toFixed(0)} s`,
    );
  }
}

Promise.all(Array.from({ length: shards }, (_, i) => run(i + 1))).then((codes) => {
  spawnSummary();
  const failed = codes.findIndex((c) => c !== 0);
  if (failed >= 0) console.error(`integration shard ${failed + 1}/${shards} failed (exit ${codes[failed]})`);
  process.exit(failed >= 0 ? codes[failed] : 0);
});
