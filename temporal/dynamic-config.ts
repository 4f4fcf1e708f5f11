/**
 * Temporal server dynamic config that the dev server of `npm start`, the tests and the benchmarks run
 * with (`--dynamic-config-value`). docker-compose.yml sets the same values for its server; a test
 * (test/unit/dynamic-config.test.ts) keeps the two equal.
 *
 * Why: with the server's defaults every hop of a settlement (workflow task → activity → workflow
 * task) waits 40-50 ms in the server, not in our code. Measured with `npm run bench:settle -- --trace`
 * (the server's defaults: `--dynamic-config`, bench/README.md): about 40 ms between an activity's scheduled and started events, and about
 * 160 ms of workflow tasks per settlement; with these values, 0 ms and about 65 ms.
 */
export const LOW_LATENCY_DYNAMIC_CONFIG: Readonly<Record<string, unknown>> = {
  // Each history shard reads its transfer queue (the tasks that hand workflow and activity tasks to
  // matching) at most this many times a second; the default 20 makes every hop wait up to 50 ms.
  // The reader is woken by new tasks, so the limit is only a ceiling and an idle server stays idle.
  // Production: raise it too (hundreds to a few thousand); the dev server has one shard, so this is
  // also its whole-host rate; a cluster with N shards reads N× this at most.
  'history.transferProcessorMaxPollRPS': 1000,
  // Lets the server hand an activity task straight back in the workflow task's completion response
  // when the worker polling that task queue has a free slot (the SDK asks for it by default), saving
  // the round trip through matching. Production: true as well; it is off by default only because
  // older SDKs did not ask for it.
  'system.enableActivityEagerExecution': true,
  // New tasks go to one partition of each task queue instead of 4. On one host partitions only spread
  // a queue's tasks where few pollers wait: a settlement's first workflow task that found no poller in
  // its partition started up to 2 s late (bench histories at c=16; the orchestration floor's c=16 row
  // varied 25-60 settle/s). Pollers still read all 4, so tasks already in the others drain (fewer read
  // partitions would strand them). Production: keep the default 4 (or more) for a queue that needs
  // more than one matching partition serves (hundreds of tasks a second), with enough pollers.
  'matching.numTaskqueueWritePartitions': 1,
};
