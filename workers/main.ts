import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { privateKeyToAccount } from 'viem/accounts';
import { ConfigError } from '../src/config';
import type { EvmNetworkId } from '../src/chains/networks';
import { startUp } from '../src/startup';
import { Relayer } from '../src/chains/evm/relayer';
import { laneOf } from '../src/chains/evm/relayer-lanes';
import { openDatabase } from '../src/db/orm';
import { createLogger } from '../src/logger';
import { registerSearchAttributes } from '../src/temporal/search-attributes';
import { ensureStuckScanSchedule } from '../src/temporal/stuck-scan';
import { createActivities } from '../activities';
import type { SignerRole } from '../activities/signers';
import { redactingActivityInterceptors } from '../src/temporal/redacting-interceptor';
import { temporalConnectionOptions } from '../src/temporal/connection';
import { temporalDataConverter } from '../src/temporal/payload-codec';
import { workerTuning } from '../src/temporal/worker-tuning';
import { installMetricsRuntime } from '../src/temporal/worker-metrics';
import { workerWorkflowOptions } from '../src/temporal/workflow-bundle';
import { solanaNetworks } from '../src/chains/solana/context';
import { startTracing, tracing, workerTracing } from '../src/observability/tracing';
import { countRpcFailures } from '../src/chains/evm/rpc-spans';

/**
 * The worker process: runs workflows/ and activities/ on TEMPORAL_TASK_QUEUE. It holds the keys by
 * role (docs/security.md): the relayer (RELAYER_PRIVATE_KEY: settlements, gas) and its settlement lane
 * keys (RELAYER_PRIVATE_KEYS), the revenue wallet (refunds) and the top-up relayer (deposits); no
 * other process may sign with them. In devnet the roles share one key.
 */
async function main() {
  // All config (media and inference too) parsed, and in production checked, before anything starts.
  const { config, networks, keys, notices } = await startUp('worker');
  const log = createLogger(config.LOG_LEVEL, 'worker');
  for (const n of notices) log.warn(n);
  // The SDK's own metrics (workflow task latencies, slots, polls) for Prometheus, in seconds with the
  // unit in the name as ours are (temporal_workflow_task_execution_latency_seconds); before any native connection.
  // Port 0: any free port, named on the 'worker metrics' line (tests read it there).
  if (config.WORKER_METRICS_ADDRESS) {
    const metricsAddress = await installMetricsRuntime(config.WORKER_METRICS_ADDRESS);
    log.info({ metricsAddress }, 'worker metrics');
    // The activities' RPC calls that got no answer, on the same endpoint and under the API's name
    // (custom metrics get no temporal_ prefix), so one alert covers both (docs/decisions/relayer-nonce-and-worker-metrics.md).
    const rpcErrors = Runtime.instance().metricMeter.createCounter(
      'x402_rpc_errors_total',
      undefined,
      'JSON-RPC calls of the worker without an answer (unreachable, HTTP error, timeout) by network, after viem retries',
    );
    countRpcFailures((network) => rpcErrors.add(1, { network }));
  }
  startTracing('worker', { endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT });
  const db = await openDatabase(config);
  const account = privateKeyToAccount(keys!.relayer);
  const laneKeys = keys!.lanes;
  // One Relayer (one nonce manager) per distinct key and network, however many roles the key has.
  const relayers = new Map<string, Relayer>();
  const slot = (id: EvmNetworkId, address: string) => `${id}:${address.toLowerCase()}`;
  const lanesOf = new Map<EvmNetworkId, Relayer[]>();
  for (const n of networks.values()) {
    if (!n.enabled) continue;
    const relayerOf = (key: `0x${string}`) => {
      const a = privateKeyToAccount(key);
      const k = slot(n.id, a.address);
      if (!relayers.has(k)) relayers.set(k, new Relayer(n, a, db, { replaceAfterMs: config.RELAYER_REPLACE_AFTER_MS }));
      return relayers.get(k)!;
    };
    for (const key of [keys!.relayer, keys!.revenue, keys!.topupRelayer]) relayerOf(key);
    lanesOf.set(n.id, laneKeys.map(relayerOf));
  }
  /** The relayer, or with a lane key (a settlement's workflow id) the lane that key always uses. */
  const relayerFor = (id: EvmNetworkId, laneKey?: string) => {
    const r = relayers.get(slot(id, account.address));
    const lanes = lanesOf.get(id);
    if (!r || !lanes) throw new Error(`no relayer for network ${id}`);
    return laneKey === undefined ? r : lanes[laneOf(laneKey, lanes.length)];
  };
  // Each role's signer is the one of its own key (configuration): an activity names its role, never an address.
  const roleAddress: Record<SignerRole, string> = {
    revenue: privateKeyToAccount(keys!.revenue).address,
    topupRelayer: privateKeyToAccount(keys!.topupRelayer).address,
    depositor: account.address,
  };
  const signerFor = (role: SignerRole, id: EvmNetworkId) => relayers.get(slot(id, roleAddress[role]));
  // Transactions these keys signed before a crash but that never got a receipt are sent again first,
  // so later nonces are not stuck behind a gap.
  for (const r of relayers.values()) {
    const n = await r.recoverPending().catch((err) => {
      log.warn({ network: r.network.id, err: String(err) }, 'could not re-send pending transactions yet');
      return 0;
    });
    if (n) log.info({ network: r.network.id, count: n }, 're-sent pending relayer transactions');
  }

  // The payload codec: a workflow whose payloads were not sealed with our key fails to decode here,
  // so its workflow task fails before any workflow code or activity runs (docs/security.md).
  const dataConverter = temporalDataConverter(config);
  const clientConnection = await Connection.connect(temporalConnectionOptions(config));
  await registerSearchAttributes(clientConnection, config.TEMPORAL_NAMESPACE);
  // The stuck scan's client (visibility and the markStuck signal) and its schedule, once per deployment.
  const temporal = new Client({ connection: clientConnection, namespace: config.TEMPORAL_NAMESPACE, dataConverter });
  const schedule = await ensureStuckScanSchedule(temporal, config.TEMPORAL_TASK_QUEUE);

  const connection = await NativeConnection.connect(temporalConnectionOptions(config));
  const bundlePath = process.env.WORKFLOW_BUNDLE_PATH;
  const traced = workerTracing();
  // A prebuilt bundle (tests, bench) has the workflow interceptors it was bundled with: traced
  // workers bundle their own, so that workflow spans are never silently missing.
  if (traced && bundlePath) log.warn('tracing is on: WORKFLOW_BUNDLE_PATH ignored, bundling workflows with the tracing interceptors');
  const workflowCode = bundlePath && !traced ? { workflowBundle: { codePath: bundlePath } } : workerWorkflowOptions();
  const worker = await Worker.create({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    dataConverter,
    ...workflowCode,
    ...workerTuning(config.WORKER_TASK_SLOTS),
    activities: createActivities({
      config,
      db,
      networks,
      relayerFor,
      signerFor,
      topUpRelayer: roleAddress.topupRelayer,
      revenueWallet: roleAddress.revenue,
      temporal,
    }),
    // The tracing interceptors outermost: activity spans record errors already redacted.
    interceptors: {
      activity: [...(traced?.activity ?? []), redactingActivityInterceptors],
      workflowModules: traced ? [...traced.workflowModules, require.resolve('../workflows/tracing-interceptors')] : [],
    },
    ...(traced ? { sinks: traced.sinks } : {}),
  });
  const solana = [...solanaNetworks(config).keys()]; // a bad SOLANA_FEE_PAYER_KEY stops start-up here
  const evm = [...lanesOf.keys()];
  const signers = [...new Set([...relayers.values()].map((r) => r.address))];
  const lanes = laneKeys.map((k) => privateKeyToAccount(k).address);
  log.info(
    {
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      relayer: account.address,
      signers,
      lanes,
      networks: [...evm, ...solana],
      stuckScan: { schedule, stuckAfterSeconds: config.STUCK_AFTER_SECONDS },
    },
    'worker ready',
  );
  await worker.run();
  await connection.close();
  await clientConnection.close();
  await db.close();
  await tracing()?.shutdown(); // exports the spans still batched
}

main().catch((err) => {
  if (err instanceof ConfigError) console.error(err.message);
  else console.error(err);
  process.exit(1);
});
