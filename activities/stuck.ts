import { heartbeat, log } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { Config } from '../src/config';
import type { Database } from '../src/db/orm';
import { replaceStuckCounts, type StuckCount } from '../src/db/stuck-payments';
import { X402Kind, X402Network, X402State, X402Stuck } from '../src/temporal/search-attributes';
import { mayBeStuck } from '../src/temporal/states';
import { stuckScanQuery } from '../src/temporal/stuck-scan';
import { markStuckSignal } from '../workflows/x402-state';

export interface StuckActivityDeps {
  config: Pick<Config, 'STUCK_AFTER_SECONDS' | 'TEMPORAL_TASK_QUEUE'>;
  db: Database;
  /** A Temporal client of the worker: visibility queries and the markStuck signal. */
  temporal: Client;
}

/**
 * The stuck scan (README "For operators"): lists this deployment's running workflows older than
 * STUCK_AFTER_SECONDS through Temporal visibility, keeps those whose X402State is non-terminal and
 * not patient (src/temporal/states.ts), signals each one not yet flagged `markStuck` (it sets
 * X402Stuck=true itself), and stores the counts per (kind, state, network) for the API's
 * x402_stuck_payments gauge. Idempotent: a repeat signals nothing new and writes the same counts.
 */
export function createStuckActivities(deps: StuckActivityDeps) {
  return {
    async scanStuckPayments(): Promise<StuckCount[]> {
      const now = new Date();
      const query = stuckScanQuery(deps.config.TEMPORAL_TASK_QUEUE, new Date(now.getTime() - deps.config.STUCK_AFTER_SECONDS * 1000));
      const counts = new Map<string, StuckCount>();
      let flagged = 0;
      for await (const wf of deps.temporal.workflow.list({ query })) {
        const attrs = wf.typedSearchAttributes;
        const kind = attrs.get(X402Kind);
        const state = attrs.get(X402State);
        if (kind === undefined || state === undefined || !mayBeStuck(kind, state)) continue;
        const network = attrs.get(X402Network) ?? 'unknown';
        const key = `${kind}|${state}|${network}`;
        const c = counts.get(key) ?? { kind, state, network, count: 0 };
        c.count += 1;
        counts.set(key, c);
        if (attrs.get(X402Stuck) !== true) {
          // A refused signal means it completed since it was listed: nothing to flag, the next scan sees the truth.
          await deps.temporal.workflow
            .getHandle(wf.workflowId, wf.runId)
            .signal(markStuckSignal)
            .then(
              () => flagged++,
              (err: unknown) => log.warn('could not flag a stuck workflow', { workflowId: wf.workflowId, error: String(err) }),
            );
        }
        heartbeat();
      }
      const result = [...counts.values()].sort((a, b) =>
        `${a.kind}|${a.state}|${a.network}`.localeCompare(`${b.kind}|${b.state}|${b.network}`),
      );
      await replaceStuckCounts(deps.db.em.fork(), result, now);
      if (result.length) log.warn('stuck payments', { counts: result, flagged });
      return result;
    },
  };
}

export type StuckActivities = ReturnType<typeof createStuckActivities>;
