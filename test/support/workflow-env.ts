import { WorkflowUpdateFailedError } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { ensureTemporalCli } from '../../temporal/cli';
import { X402_SEARCH_ATTRIBUTES } from '../../src/temporal/search-attributes';
import { workflowBundleOptions } from '../../src/temporal/workflow-bundle';

/**
 * Workflow tests with mocked activities (Temporal's samples-typescript pattern): a local Temporal dev
 * server from the CLI the project builds (`TestWorkflowEnvironment.createLocal`), our search attributes
 * registered, the workflow bundle the project's global setup built (test/support/workflows-global-setup.ts),
 * and a worker per test with the activities the test passes.
 */
export interface WorkflowTestEnv {
  env: TestWorkflowEnvironment;
  /** Runs `fn` while a worker with `activities` polls a fresh task queue. */
  withWorker<T>(activities: object, fn: (taskQueue: string) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

let runtimeInstalled = false;

/**
 * The deadlock timeout of a worker's workflow thread (5 s, the SDK's default), which debugMode lifts:
 * set back. A worker option the SDK reads (worker-options.js `isolateExecutionTimeout`) but does not
 * declare in WorkerOptions, hence spread in.
 */
const SDK_DEADLOCK_TIMEOUT: object = { isolateExecutionTimeout: '5s' };

/** Where the workflows project's global setup wrote the bundle of our workflows. */
export const WORKFLOW_BUNDLE_ENV = 'X402_TEST_WORKFLOWS_BUNDLE';

/**
 * Our workflows' bundle: the one the project's global setup built, or (a run outside that project, or
 * another checkout's workflows) one built here.
 */
export async function workflowBundle(workflowsPath?: string): Promise<WorkflowBundleOption> {
  const built = process.env[WORKFLOW_BUNDLE_ENV];
  if (built && !workflowsPath) return { codePath: built };
  return bundleWorkflowCode({ ...workflowBundleOptions(workflowsPath), logger: new DefaultLogger('WARN') });
}

/** `workflowsPath`: another checkout's workflows (the pre-patch history recorder); default ours. */
export async function startWorkflowTestEnv(opts: { workflowsPath?: string } = {}): Promise<WorkflowTestEnv> {
  if (!runtimeInstalled) {
    Runtime.install({ logger: new DefaultLogger('WARN') });
    runtimeInstalled = true;
  }
  const path = await ensureTemporalCli();
  const env = await TestWorkflowEnvironment.createLocal({
    server: { executable: { type: 'existing-path', path }, searchAttributes: [...X402_SEARCH_ATTRIBUTES], ui: false },
  });
  const bundle = await workflowBundle(opts.workflowsPath);
  return {
    env,
    async withWorker(activities, fn) {
      const taskQueue = `wf-test-${randomUUID()}`;
      // debugMode: the workflows run in this thread's V8 context (the SDK's reusable VM, as in a
      // worker's workflow thread) instead of a new thread per worker, whose start (a fresh isolate that
      // loads the SDK and evaluates the bundle) took 1-3 s of each test (docs/decisions/ci-databases-by-risk.md).
      const worker = await Worker.create({
        connection: env.nativeConnection,
        taskQueue,
        workflowBundle: bundle,
        activities,
        debugMode: true,
        ...SDK_DEADLOCK_TIMEOUT,
      });
      return worker.runUntil(fn(taskQueue));
    },
    close: () => env.teardown(),
  };
}

/**
 * Start options for a workflow whose local activity is held (a confirmation that waits): the worker
 * heartbeats a workflow task that a local activity keeps open at 80% of the task's timeout, and only
 * then do its state changes, timers and updates reach the server. With the default 10 s each such step
 * waits about 8 s; with 1 s, about 0.8 s. Only the latency changes, not the commands or their order.
 */
export const HELD_LOCAL_ACTIVITY = { workflowTaskTimeout: '1s' } as const;

/** What an operator's update got: `accepted <result>`, or the validator's or handler's refusal message. */
export const updateRefusal = (p: Promise<unknown>): Promise<string | undefined> =>
  p.then(
    (v) => `accepted ${JSON.stringify(v)}`,
    (err: unknown) => {
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      return (err as WorkflowUpdateFailedError).cause?.message;
    },
  );

/**
 * The file's one WorkflowTestEnv (one server per test file, however many describes use it): started
 * by the first describe's `beforeAll`, or by the first `withWorker` of a `test.concurrent` (Jest starts
 * those before nested `beforeAll` hooks), and closed after the file's last test.
 */
let shared: Promise<WorkflowTestEnv> | undefined;
let ready: WorkflowTestEnv | undefined;
const startShared = () =>
  (shared ??= startWorkflowTestEnv().then((env) => {
    ready = env;
    return env;
  }));
if (typeof afterAll === 'function') {
  // At import, so at the file's top level: after every describe of the file.
  afterAll(async () => {
    const env = shared;
    shared = undefined;
    ready = undefined;
    await (await env)?.close();
  });
}

/** The file's WorkflowTestEnv, started before the enclosing describe's tests (see `shared`). */
export function useWorkflowTestEnv(): WorkflowTestEnv {
  beforeAll(startShared, 120_000);
  const started = () => {
    if (!ready) throw new Error('the workflow test environment has not started');
    return ready;
  };
  return {
    get env() {
      return started().env;
    },
    withWorker: async (activities, fn) => (await startShared()).withWorker(activities, fn),
    close: () => started().close(),
  };
}
