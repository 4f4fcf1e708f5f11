/**
 * The end-of-run checks of bench/chaos.ts that read more than balances: the relayer account's
 * transactions on chain against its write-ahead records, and each unanswered payment's workflow in
 * Temporal (parked, still running, flagged stuck or not), after one stuck scan run on demand.
 */
import type { Client, WorkflowExecutionDescription } from '@temporalio/client';
import type { Address, Hex, PublicClient } from 'viem';
import { RelayerTransaction } from '../src/db/entities';
import type { Database } from '../src/db/orm';
import { Relayer } from '../src/chains/evm/relayer';
import { X402State, X402Stuck } from '../src/temporal/search-attributes';
import { X402_KINDS } from '../src/temporal/states';
import { stuckScanScheduleId } from '../src/temporal/stuck-scan';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface RelayerAudit {
  /** Transactions of the relayer account mined since the run started (its nonce delta on chain). */
  mined: number;
  reverted: number;
  records: number;
  /** Mined transactions that no record names (nonce delta minus the records' mined transactions). */
  unrecorded: number;
  /** Records with more than one successful mined transaction: one effect carried out twice. */
  twice: { id: string; hashes: Hex[] }[];
  /** Records with more than one mined transaction, one or more of them reverted (a wasted duplicate). */
  duplicateReverted: { id: string; hashes: Hex[] }[];
}

/**
 * The relayer account's transactions against its records: every hash a record ever sent (replacements
 * and re-nonced sends) looked up on the node itself, and the account's nonce delta since `nonceAtStart`.
 * One chain at a time: the records of `chain`'s id only.
 */
export async function auditRelayer(chain: PublicClient, db: Database, relayer: Address, nonceAtStart: number): Promise<RelayerAudit> {
  const chainId = await chain.getChainId();
  const rows = await db.em.fork().find(RelayerTransaction, { signer: { $in: [relayer, relayer.toLowerCase()] }, chainId });
  const nonceNow = await chain.getTransactionCount({ address: relayer, blockTag: 'latest' });
  const audit: RelayerAudit = {
    mined: nonceNow - nonceAtStart,
    reverted: 0,
    records: rows.length,
    unrecorded: 0,
    twice: [],
    duplicateReverted: [],
  };
  let recordedMined = 0;
  for (const row of rows) {
    const mined: { hash: Hex; ok: boolean }[] = [];
    for (const hash of Relayer.hashesOf(row)) {
      const receipt = await chain.getTransactionReceipt({ hash }).catch(() => null);
      if (receipt) mined.push({ hash, ok: receipt.status === 'success' });
    }
    recordedMined += mined.length;
    audit.reverted += mined.filter((m) => !m.ok).length;
    if (mined.filter((m) => m.ok).length > 1) audit.twice.push({ id: row.id, hashes: mined.map((m) => m.hash) });
    else if (mined.length > 1) audit.duplicateReverted.push({ id: row.id, hashes: mined.map((m) => m.hash) });
  }
  audit.unrecorded = Math.max(0, audit.mined - recordedMined);
  return audit;
}

export interface WorkflowView {
  status: string; // RUNNING, COMPLETED, FAILED, ... or ABSENT
  state?: string;
  stuck: boolean;
  startedAt?: Date;
}

const SETTLE_TERMINAL: readonly string[] = X402_KINDS.settle.terminal;

export async function viewWorkflow(client: Client, workflowId: string): Promise<WorkflowView> {
  let d: WorkflowExecutionDescription;
  try {
    d = await client.workflow.getHandle(workflowId).describe();
  } catch (err) {
    if ((err as Error).name === 'WorkflowNotFoundError') return { status: 'ABSENT', stuck: false };
    throw err;
  }
  return {
    status: d.status.name,
    state: d.typedSearchAttributes.get(X402State),
    stuck: d.typedSearchAttributes.get(X402Stuck) === true,
    startedAt: d.startTime,
  };
}

/** Parked: waits (or ended) in needs_review, or is still running flagged X402Stuck by the stuck scan. */
export const isParked = (w: WorkflowView) => w.state === 'needs_review' || (w.status === 'RUNNING' && w.stuck);
/** Ended, or in a terminal X402State. */
export const isTerminal = (w: WorkflowView) =>
  (w.status !== 'RUNNING' && w.status !== 'ABSENT') || (w.state !== undefined && SETTLE_TERMINAL.includes(w.state));

/**
 * Runs the deployment's stuck scan now (its schedule's trigger; the worker's activity flags what it
 * finds) once every workflow in `ids` is older than `stuckAfterSeconds`, and waits for the scan to end.
 * Returns what happened, for the report.
 */
export async function runStuckScan(client: Client, taskQueue: string, views: WorkflowView[], stuckAfterSeconds: number): Promise<string> {
  const youngest = Math.max(0, ...views.map((v) => v.startedAt?.getTime() ?? 0));
  const wait = youngest + (stuckAfterSeconds + 2) * 1000 - Date.now();
  if (wait > 0) await sleep(Math.min(wait, (stuckAfterSeconds + 2) * 1000));
  const schedule = client.schedule.getHandle(stuckScanScheduleId(taskQueue));
  const before = new Set((await schedule.describe()).info.recentActions.map((a) => a.action.workflow.workflowId));
  await schedule.trigger();
  const until = Date.now() + 60_000;
  while (Date.now() < until) {
    const taken = (await schedule.describe()).info.recentActions.find((a) => !before.has(a.action.workflow.workflowId));
    if (taken) {
      const run = client.workflow.getHandle(taken.action.workflow.workflowId, taken.action.workflow.firstExecutionRunId);
      const left = until - Date.now();
      const result = await Promise.race([run.result().then((r: unknown) => r), sleep(left).then(() => 'timeout')]);
      if (result === 'timeout') return 'the stuck scan did not finish within 60 s';
      return `stuck scan ran (${JSON.stringify(result)})`;
    }
    await sleep(500);
  }
  return 'the stuck scan was not started within 60 s of its trigger';
}
