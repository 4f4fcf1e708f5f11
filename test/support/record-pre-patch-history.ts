import { execSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isDeepStrictEqual } from 'node:util';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import * as topUp from './topup-workflow-mocks';
import * as settlement from './settlement-workflow-mocks';
import { startWorkflowTestEnv } from './workflow-env';

/**
 * Records the pre-patch histories that test/workflows/replay.test.ts replays with today's workflows:
 * each one is a workflow run by the workflow code of the commit before a `patched(...)` change, on
 * mocked activities. Regenerate them all, or the ones named (needs git and the Temporal CLI, as the
 * workflows tests do):
 *
 *   npx tsx test/support/record-pre-patch-history.ts [topUpNeedsReview] [settlementThreeActivities]
 */
const ROOT = join(__dirname, '..', '..');
const HISTORIES = join(ROOT, 'test', 'fixtures', 'histories');

export interface PrePatchHistory {
  /** The patch whose older histories this one stands for. */
  patch: string;
  /** The parent of the commit that added the patch. */
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
} satisfies Record<string, PrePatchHistory>;

/** Runs `h` on the workflows of its commit (checked out to a temporary directory) and writes its history. */
async function record(h: PrePatchHistory) {
  const commit = execSync(`git rev-parse ${h.commit}`, { cwd: ROOT }).toString().trim();
  const old = mkdtempSync(join(tmpdir(), 'x402-pre-patch-'));
  try {
    // The old workflows and what they import, resolved against our node_modules.
    execSync(`git archive ${commit} workflows src activities | tar -x -C ${old}`, { cwd: ROOT });
    symlinkSync(join(ROOT, 'node_modules'), join(old, 'node_modules'));
    const t = await startWorkflowTestEnv({ workflowsPath: join(old, 'workflows') });
    try {
      const result = await t.withWorker(h.activities(), async (taskQueue) => {
        const handle = await t.env.client.workflow.start(h.workflowType, { taskQueue, workflowId: h.workflowId, args: h.args() });
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
  const all = PRE_PATCH_HISTORIES as Record<string, PrePatchHistory>;
  for (const name of names.length ? names : Object.keys(all)) {
    if (!all[name]) throw new Error(`no pre-patch history ${name}; known: ${Object.keys(all).join(', ')}`);
    await record(all[name]);
  }
}

if (require.main === module)
  main(process.argv.slice(2)).catch((err) => {
    console.error(err);
    process.exit(1);
  });
