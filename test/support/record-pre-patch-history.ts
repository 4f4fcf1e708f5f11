import { execSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isDeepStrictEqual } from 'node:util';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import * as topUp from './topup-workflow-mocks';
import * as settlement from './settlement-workflow-mocks';
import * as crossChain from './crosschain-workflow-mocks';
import { startWorkflowTestEnv } from './workflow-env';

/**
 * Records the histories that test/workflows/replay.test.ts replays with today's workflows: each one is
 * a workflow run by the workflow code of an earlier commit, on mocked activities. Most stand for the
 * histories before a `patched(...)` change (PRE_PATCH_HISTORIES). Regenerate them all, or the ones named
 * (needs git and the Temporal CLI, as the workflows tests do):
 *
 *   npx tsx test/support/record-pre-patch-history.ts [topUpNeedsReview] [settlementThreeActivities] [settlementStuckAtStart]
 *     [crossChainPreBurnTerms]
 */
const ROOT = join(__dirname, '..', '..');
const HISTORIES = join(ROOT, 'test', 'fixtures', 'histories');

export interface RecordedHistory {
  /** The commit whose workflows wrote it. */
  commit: string;
  /**
   * Binary protobuf (temporal.api.history.v1.History): the SDK's own JSON converters (historyToJSON and
   * historyFromJSON) fail here, its protobufjs 8 not knowing the 7.x types of @temporalio/proto.
   */
  file: string;
  workflowType: string;
  workflowId: string;
  args: () => unknown[];
  activities: () => object;
  /** What the old code returned; the recorder refuses to write anything else. */
  outcome: unknown;
  /** A signal sent with the start (signal-with-start), so the first workflow task carries it. */
  signal?: string;
}

export interface PrePatchHistory extends RecordedHistory {
  /** The patch whose older histories this one stands for; `commit` is the parent of the commit that added it. */
  patch: string;
}

export const PRE_PATCH_HISTORIES = {
  /**
   * A cross-chain top-up whose bridge leg cannot deliver: before `operator-actions-v1` (added in
   * 8b75891) it ended in needs_review at once; today it waits for an operator.
   */
  topUpNeedsReview: {
    patch: 'operator-actions-v1',
    commit: '8b75891^',
    file: join(HISTORIES, 'topup-needs-review-pre-operator-actions.binpb'),
    workflowType: 'topUpWorkflow',
    workflowId: 'topup:demo-merchant:pre-operator-actions',
    args: () => [{ ...topUp.input(1), workflowId: 'topup:demo-merchant:pre-operator-actions' }],
    activities: () => topUp.mocks().activities,
    outcome: { state: 'needs_review', errorReason: 'needs_review' },
  },
  /**
   * A valid settlement: before `settlement-one-local-activity` (added in 1d2f43a) it ran verifyPayment,
   * submitPayment and confirmPayment, three local activities; today one, settlePayment.
   */
  settlementThreeActivities: {
    patch: 'settlement-one-local-activity',
    commit: '1d2f43a^',
    file: join(HISTORIES, 'settlement-pre-one-local-activity.binpb'),
    workflowType: 'settlementWorkflow',
    workflowId: 'settle:base-sepolia:pre-one-local-activity',
    args: () => [{ ...settlement.input(1), workflowId: 'settle:base-sepolia:pre-one-local-activity' }],
    activities: () => settlement.mocks().activities,
    outcome: { response: settlement.settled, organizationId: 'org-1' },
  },
  /**
   * A delivered cross-chain settlement: before `bridge-burn-terms-v1` (added after 3ba09dd) it burned
   * at once after verification, at standard finality; today it reads the burn's terms first.
   */
  crossChainPreBurnTerms: {
    patch: 'bridge-burn-terms-v1',
    commit: '3ba09dd',
    file: join(HISTORIES, 'crosschain-pre-burn-terms.binpb'),
    workflowType: 'crossChainSettlementWorkflow',
    workflowId: 'settle:base-sepolia:pre-burn-terms',
    args: () => [{ ...crossChain.input(1), workflowId: 'settle:base-sepolia:pre-burn-terms' }],
    activities: () => crossChain.mocks().activities,
    outcome: crossChain.outcome,
  },
} satisfies Record<string, PrePatchHistory>;

/** Histories of code since changed without a patch, which must replay all the same. */
export const EARLIER_HISTORIES = {
  /**
   * A settlement whose first workflow task carried the stuck scan's `markStuck` (a worker that was down
   * past STUCK_AFTER_SECONDS): its handler ran at `setHandler`, so the history's markers are
   * `x402-mark-stuck`, then `settlement-one-local-activity`. Recorded from 9011bb2, before the API's
   * type was split from `settlementWorkflow` (whose `patched()` call must stay after the handlers).
   */
  settlementStuckAtStart: {
    commit: '9011bb2',
    file: join(HISTORIES, 'settlement-stuck-at-start.binpb'),
    workflowType: 'settlementWorkflow',
    workflowId: 'settle:base-sepolia:stuck-at-start',
    args: () => [{ ...settlement.input(2), workflowId: 'settle:base-sepolia:stuck-at-start' }],
    activities: () => settlement.mocks().activities,
    outcome: { response: settlement.settled, organizationId: 'org-1' },
    signal: 'markStuck',
  },
} satisfies Record<string, RecordedHistory>;

/** Runs `h` on the workflows of its commit (checked out to a temporary directory) and writes its history. */
async function record(h: RecordedHistory) {
  const commit = execSync(`git rev-parse ${h.commit}`, { cwd: ROOT }).toString().trim();
  const old = mkdtempSync(join(tmpdir(), 'x402-pre-patch-'));
  try {
    // The old workflows and what they import, resolved against our node_modules.
    execSync(`git archive ${commit} workflows src activities | tar -x -C ${old}`, { cwd: ROOT });
    symlinkSync(join(ROOT, 'node_modules'), join(old, 'node_modules'));
    const t = await startWorkflowTestEnv({ workflowsPath: join(old, 'workflows') });
    try {
      const result = await t.withWorker(h.activities(), async (taskQueue) => {
        const options = { taskQueue, workflowId: h.workflowId, args: h.args() };
        const handle = h.signal
          ? await t.env.client.workflow.signalWithStart(h.workflowType, { ...options, signal: h.signal, signalArgs: [] })
          : await t.env.client.workflow.start(h.workflowType, options);
        return { outcome: await handle.result(), history: await handle.fetchHistory() };
      });
      if (!isDeepStrictEqual(result.outcome, h.outcome)) throw new Error(`unexpected outcome ${JSON.stringify(result)}`);
      writeFileSync(h.file, temporal.api.history.v1.History.encode(result.history).finish());
      console.log(`recorded ${h.file} from ${commit}: ${JSON.stringify(result.outcome)}`);
    } finally {
      await t.close();
    }
  } finally {
    rmSync(old, { recursive: true, force: true });
  }
}

async function main(names: string[]) {
  const all: Record<string, RecordedHistory> = { ...PRE_PATCH_HISTORIES, ...EARLIER_HISTORIES };
  for (const name of names.length ? names : Object.keys(all)) {
    if (!all[name]) throw new Error(`no recorded history ${name}; known: ${Object.keys(all).join(', ')}`);
    await record(all[name]);
  }
}

if (require.main === module)
  main(process.argv.slice(2)).catch((err) => {
    console.error(err);
    process.exit(1);
  });
