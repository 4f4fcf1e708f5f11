import type { BundleOptions, WorkerOptions } from '@temporalio/worker';

/** The workflows the worker registers (workflows/index.ts). */
export const WORKFLOWS_PATH = require.resolve('../../workflows');

/**
 * How every workflow bundle is built: the worker's own (`bundlerOptions`) and the prebuilt ones of
 * the tests and benches, so that they run what production runs.
 *
 * `preloadModules`: the SDK re-evaluates a bundle's modules for every workflow it creates (module
 * state stays per workflow), unless they are preloaded once into the shared V8 context. Ours hold no
 * state (eslint.config.mjs forbids module-level `let` and `new` in workflows/), so the SDK's workflow
 * API and the workflows themselves are preloaded: creating a settlement workflow takes about half the
 * CPU and a fifth of the heap (docs/decisions/workflow-modules-preloaded.md).
 */
export function workflowBundleOptions(workflowsPath = WORKFLOWS_PATH): Pick<BundleOptions, 'workflowsPath' | 'preloadModules'> {
  return { workflowsPath, preloadModules: ['@temporalio/workflow', workflowsPath] };
}

/** The same, as the options of a worker (or replayer) that bundles the workflows itself. */
export function workerWorkflowOptions(): Pick<WorkerOptions, 'workflowsPath' | 'bundlerOptions'> {
  const { workflowsPath, preloadModules } = workflowBundleOptions();
  return { workflowsPath, bundlerOptions: { preloadModules } };
}
