import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { workflowBundleOptions } from '../../src/temporal/workflow-bundle';
import { WORKFLOW_BUNDLE_ENV } from './workflow-env';

/**
 * The workflows project's global setup: the workflow bundle built once for all its files (each file's
 * workers and the replay tests load it, test/support/workflow-env.ts), not once per file.
 */
export default async function workflowsGlobalSetup(): Promise<void> {
  const path = join(__dirname, '..', '..', '.data', `test-workflows-bundle-${process.pid}.js`);
  mkdirSync(dirname(path), { recursive: true });
  const { code } = await bundleWorkflowCode({ ...workflowBundleOptions(), logger: new DefaultLogger('WARN') });
  writeFileSync(path, code);
  process.env[WORKFLOW_BUNDLE_ENV] = path; // inherited by the test files
}
