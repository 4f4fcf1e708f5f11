/**
 * The money paths bench/chaos.ts runs besides its settlements (bench/chaos-chat.ts,
 * bench/chaos-topup.ts, bench/chaos-withdrawal.ts), and the tally each of them reports: the run
 * calls their jobs among the settlements, then asks each for its verdict from the chain, the
 * database and Temporal.
 */
import type { Client } from '@temporalio/client';
import type { Database } from '../src/db/orm';
import { viewWorkflow, type WorkflowView } from './chaos-audit';

export interface KindTally {
  kind: string;
  total: number;
  /** Moved money once and told so (a chat served, a top-up deposited, a withdrawal paid out). */
  settled: number;
  /** Refused with a 4xx (or a 402), nothing moved. */
  refused: number;
  /** Charged, then paid back exactly once (chat, top-up). */
  refunded: number;
  /** Waits (or ended) in needs_review, or runs flagged X402Stuck. */
  parked: number;
  stuckUnflagged: number;
  lost: number;
  doubled: number;
  /** The records of this kind against the chain (per payer and per effect). */
  ledgerOk: boolean;
  tries: number;
  /** The final HTTP status of each request (undefined: none within its deadline), for the report. */
  answers?: (number | string | undefined)[];
  problems: string[];
}

export const emptyTally = (kind: string, total: number): KindTally => ({
  kind,
  total,
  settled: 0,
  refused: 0,
  refunded: 0,
  parked: 0,
  stuckUnflagged: 0,
  lost: 0,
  doubled: 0,
  ledgerOk: true,
  tries: 0,
  problems: [],
});

/** Counts an effect as lost, with what the audit found. */
export function lose(t: KindTally, problem: string): void {
  t.lost++;
  t.problems.push(problem);
}

/** What a kind gets once the API, the worker and the database are up. */
export interface KindContext {
  apiUrl: () => string;
  apiKey: string;
  cookie: string;
  db: Database;
  random: () => number;
}

/** What a kind gets for its verdict, after every job ended. */
export interface AuditContext {
  temporal: Client;
  db: Database;
}

export interface ChaosKind {
  name: string;
  /** Runs job `i` (0-based, of `count`) as a client would, retrying until a final answer or its deadline. */
  run(i: number): Promise<void>;
  count: number;
  /** Waits (bounded) for what follows the answers (refunds, deliveries), then judges. */
  audit(a: AuditContext): Promise<KindTally>;
}

/**
 * A client that sends the same request again on a dropped connection, a 5xx, a 429 or a pending
 * answer, until `final` accepts one or `deadlineMs` passes. Returns the final answer, if any, and
 * how many tries it took.
 */
export async function untilFinal<T>(
  send: () => Promise<T | undefined>,
  final: (answer: T) => boolean,
  o: { deadlineMs: number; random: () => number },
): Promise<{ answer?: T; tries: number }> {
  const until = Date.now() + o.deadlineMs;
  let tries = 0;
  while (Date.now() < until) {
    tries++;
    const answer = await send().catch(() => undefined);
    if (answer !== undefined && final(answer)) return { answer, tries };
    await new Promise((r) => setTimeout(r, 250 + o.random() * 500));
  }
  return { tries };
}

/** The workflow of `id` as the audit sees it; absent when it never started. */
export const workflowOf = (temporal: Client, id: string): Promise<WorkflowView> => viewWorkflow(temporal, id);

/** Parked in this kind's sense: in needs_review, or running and flagged stuck. */
export const parkedView = (w: WorkflowView) => w.state === 'needs_review' || (w.status === 'RUNNING' && w.stuck);

/** Waits (bounded) until `settledNow` says every effect is done; returns whether it is. */
export async function settleDown(settledNow: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await settledNow().catch(() => false)) return true;
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** mulberry32: a small seeded generator, so a run can be repeated with --seed. */
export function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
