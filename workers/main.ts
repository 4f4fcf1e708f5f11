import { Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { privateKeyToAccount } from 'viem/accounts';
import { loadConfig, ConfigError } from '../src/config';
import { buildNetworkTable, type EvmNetworkId } from '../src/chains/networks';
import { Relayer } from '../src/chains/evm/relayer';
import { laneOf, relayerLaneKeys } from '../src/chains/evm/relayer-lanes';
import { openDatabase } from '../src/db/orm';
import { createLogger } from '../src/logger';
import { registerSearchAttributes } from '../src/temporal/search-attributes';
import { createActivities } from '../activities';
import { solanaNetworks } from '../src/chains/solana/context';

/**
 * The worker process: runs workflows/ and activities/ on TEMPORAL_TASK_QUEUE. It owns its relayer
 * key (RELAYER_PRIVATE_KEY) and its settlement lane keys (RELAYER_PRIVATE_KEYS) on every network it
 * serves; no other process may sign with them.
 */
async function main() {
  const config = loadConfig();
  const networks = buildNetworkTable(config.env);
  const log = createLogger(config.LOG_LEVEL, 'worker');
  const db = await openDatabase(config);
  const account = privateKeyToAccount(config.RELAYER_PRIVATE_KEY as `0x${string}`);
  const laneKeys = relayerLaneKeys(config);

  // One Relayer per (network, key): a key's nonces must be allocated in one place only.
  const relayers = new Map<EvmNetworkId, { primary: Relayer; lanes: Relayer[] }>();
  for (const n of networks.values()) {
    if (!n.enabled) continue;
    const byKey = new Map<string, Relayer>();
    const relayerOf = (key: `0x${string}`) =>
      byKey.get(key.toLowerCase()) ??
      byKey
        .set(key.toLowerCase(), new Relayer(n, privateKeyToAccount(key), db, { replaceAfterMs: config.RELAYER_REPLACE_AFTER_MS }))
        .get(key.toLowerCase())!;
    relayers.set(n.id, { primary: relayerOf(config.RELAYER_PRIVATE_KEY as `0x${string}`), lanes: laneKeys.map(relayerOf) });
  }
  /** The primary relayer, or with a lane key (a settlement's workflow id) the lane that key always uses. */
  const relayerFor = (id: EvmNetworkId, laneKey?: string) => {
    const r = relayers.get(id);
    if (!r) throw new Error(`no relayer for network ${id}`);
    return laneKey === undefined ? r.primary : r.lanes[laneOf(laneKey, r.lanes.length)];
  };
  // Transactions this key signed before a crash but that never got a receipt are sent again first,
  // so later nonces are not stuck behind a gap.
  for (const r of new Set([...relayers.values()].flatMap((x) => [x.primary, ...x.lanes]))) {
    const n = await r.recoverPending().catch((err) => {
      log.warn({ network: r.network.id, err: String(err) }, 'could not re-send pending transactions yet');
      return 0;
    });
    if (n) log.info({ network: r.network.id, count: n }, 're-sent pending relayer transactions');
  }

  const clientConnection = await Connection.connect({ address: config.TEMPORAL_ADDRESS });
  await registerSearchAttributes(clientConnection, config.TEMPORAL_NAMESPACE);
  await clientConnection.close();

  const connection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS });
  const bundlePath = process.env.WORKFLOW_BUNDLE_PATH;
  const worker = await Worker.create({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    ...(bundlePath ? { workflowBundle: { codePath: bundlePath } } : { workflowsPath: require.resolve('../workflows') }),
    activities: createActivities({ config, db, networks, relayerFor }),
  });
  const solana = [...solanaNetworks(config).keys()]; // a bad SOLANA_FEE_PAYER_KEY stops start-up here
  const lanes = laneKeys.map((k) => privateKeyToAccount(k).address);
  log.info(
    { taskQueue: config.TEMPORAL_TASK_QUEUE, relayer: account.address, lanes, networks: [...relayers.keys(), ...solana] },
    'worker ready',
  );
  await worker.run();
  await connection.close();
  await db.close();
}

main().catch((err) => {
  if (err instanceof ConfigError) console.error(err.message);
  else console.error(err);
  process.exit(1);
});
