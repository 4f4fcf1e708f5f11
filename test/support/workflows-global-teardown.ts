import { rmSync } from 'node:fs';
import { WORKFLOW_BUNDLE_ENV } from './workflow-env';

/** Removes the bundle the workflows project's global setup wrote. */
export default async function workflowsGlobalTeardown(): Promise<void> {
  const path = process.env[WORKFLOW_BUNDLE_ENV];
  if (path) rmSync(path, { force: true });
}
