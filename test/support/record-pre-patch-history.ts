import { execSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { input, mocks } from './topup-workflow-mocks';
import { startWorkflowTestEnv } from './workflow-env';

/**
 * Records the pre-patch history that test/workflows/replay.test.ts replays with today's workflows:
 * a cross-chain top-up whose bridge leg cannot deliver, run by the workflow code of the commit
 * before the `operator-actions-v1` patch (it ended in needs_review at once; today it waits for an
 * operator). Regenerate (needs git and the Temporal CLI, as the workflows tests do):
 *
 *   npx tsx test/support/record-pre-patch-history.ts
 */
const ROOT = join(__dirname, '..', '..');
/** The parent of 8b75891, the commit that added the patch. */
export const PRE_PATCH_COMMIT = '8b75891^';
/**
 * Binary protobuf (temporal.api.history.v1.History): the SDK's own JSON converters (historyToJSON and
 * historyFromJSON) fail here, its protobufjs 8 not knowing the 7.x types of @temporalio/proto.
 */
export const FIXTURE = join(ROOT, 'test', 'fixtures', 'histories', 'topup-needs-review-pre-operator-actions.binpb');

async function main() {
  const commit = execSync(`git rev-parse ${PRE_PATCH_COMMIT}`, { cwd: ROOT }).toString().trim();
  const old = mkdtempSync(join(tmpdir(), 'x402-pre-patch-'));
  try {
    // The old workflows and what they import, resolved against our node_modules.
    execSync(`git archive ${commit} workflows src activities | tar -x -C ${old}`, { cwd: ROOT });
    symlinkSync(join(ROOT, 'node_modules'), join(old, 'node_modules'));
    const t = await startWorkflowTestEnv({ workflowsPath: join(old, 'workflows') });
    try {
      const m = mocks();
      const i = input(1);
      i.workflowId = 'topup:demo-merchant:pre-operator-actions';
      const result = await t.withWorker(m.activities, async (taskQueue) => {
        const handle = await t.env.client.workflow.start('topUpWorkflow', { taskQueue, workflowId: i.workflowId, args: [i] });
        return { outcome: await handle.result(), history: await handle.fetchHistory() };
      });
      if ((result.outcome as { state?: string }).state !== 'needs_review') throw new Error(`unexpected outcome ${JSON.stringify(result)}`);
      writeFileSync(FIXTURE, temporal.api.history.v1.History.encode(result.history).finish());
      console.log(`recorded ${FIXTURE} from ${commit}: ${JSON.stringify(result.outcome)}`);
    } finally {
      await t.close();
    }
  } finally {
    rmSync(old, { recursive: true, force: true });
  }
}

if (require.main === module)
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
