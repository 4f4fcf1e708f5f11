/** What one row of bench/settle.ts measured, and the helpers that measure it. */
import { performance } from 'node:perf_hooks';
import type { CpuSpent } from './proc';

export type Mode = 'api' | 'duplicate' | 'orchestration' | 'workflow' | 'floor';

export interface PhaseResult {
  mode: Mode;
  /** The row's name in the tables when the mode's own would not tell two rows apart (--cluster: 1 or 2 workers). */
  label?: string;
  concurrency: number;
  n: number;
  wallMs: number;
  latencies: number[];
  /** Settlements on chain when the row ended (throughput counts these). */
  confirmed: number;
  /** Settlements on chain after every workflow of the row finished (failures = n − this). */
  finalConfirmed: number;
  recount?: () => Promise<{ confirmed: number; issues: string[] }>;
  /** On-chain inconsistencies (duplicate events, balance != count) at the last count. */
  chainIssues: string[];
  /** Things worth printing under the table (non-200 answers, balance mismatches, errors). */
  notes: string[];
  /** api rows: workflow id of payment i (for --trace). */
  workflowIds?: string[];
  /** CPU ms each process group spent during the row. */
  cpu?: CpuSpent;
}

/**
 * One row from its rounds (`--rounds`): counts, wall time, CPU and notes add up, latencies and
 * workflow ids join, and the recount asks every round again.
 */
export function mergeRounds<R extends PhaseResult>(parts: R[]): R {
  if (parts.length === 1) return parts[0];
  const sum = (f: (r: R) => number) => parts.reduce((t, r) => t + f(r), 0);
  const recounts = parts.map((r) => r.recount);
  const cpu: Record<string, number> = {};
  for (const r of parts) for (const [k, v] of Object.entries(r.cpu ?? {})) cpu[k] = (cpu[k] ?? 0) + v;
  return {
    ...parts[0],
    n: sum((r) => r.n),
    wallMs: sum((r) => r.wallMs),
    latencies: parts.flatMap((r) => r.latencies),
    confirmed: sum((r) => r.confirmed),
    finalConfirmed: sum((r) => r.finalConfirmed),
    recount: recounts.every(Boolean)
      ? async () => {
          const counts = await Promise.all(recounts.map((f) => f!()));
          return { confirmed: counts.reduce((t, c) => t + c.confirmed, 0), issues: counts.flatMap((c) => c.issues) };
        }
      : undefined,
    chainIssues: parts.flatMap((r) => r.chainIssues),
    notes: parts.flatMap((r) => r.notes),
    workflowIds: parts[0].workflowIds && parts.flatMap((r) => r.workflowIds ?? []),
    cpu: parts.some((r) => r.cpu) ? cpu : undefined,
  };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** Runs `task(i)` for i in [0, n) with at most `concurrency` in flight (closed loop). */
export async function runClosedLoop(n: number, concurrency: number, task: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      for (let i = next++; i < n; i = next++) await task(i);
    }),
  );
  return performance.now() - t0;
}

/** A FIFO mutex: callers run one at a time, in call order. */
export function mutex() {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };
}
