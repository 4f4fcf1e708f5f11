import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { entryArgs } from '../../devnet/process';
import { recordSpawnTime } from './services';

const ROOT = join(__dirname, '..', '..');

/**
 * `npm run ops -- …` as a process against a test's Temporal server: its exit code and output. `env`
 * adds variables, e.g. the worker's PAYLOAD_CODEC_KEYS (the CLI seals its updates with them).
 */
export const opsCli =
  (temporalAddress: string, env: Record<string, string> = {}) =>
  (...args: string[]) =>
    new Promise<{ code: number; out: string }>((resolve) => {
      const started = Date.now();
      execFile(
        process.execPath,
        [...entryArgs(join(ROOT, 'ops', 'cli.ts')), ...args],
        { cwd: ROOT, env: { ...process.env, ...env, TEMPORAL_ADDRESS: temporalAddress, TEMPORAL_NAMESPACE: 'default' }, timeout: 120_000 },
        (err, stdout, stderr) => {
          recordSpawnTime('ops', Date.now() - started);
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr });
        },
      );
    });
