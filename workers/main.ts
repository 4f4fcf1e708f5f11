import { Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { privateKeyToAccount } from 'viem/accounts';
import { loadConfig, ConfigError } from '../src/config';
import { buildNetworkTable, type EvmNetworkId } from '../src/chains/networks';
import { Relayer } from '../src/chains/evm/relayer';
import { openDatabase } from '../src/db/orm';
import { createLogger } from '../src/logger';
import { registerSearchAttributes } from '../temporal/search-attributes';
import { createActivities } from '../activities';
import { solanaNetworks } from '../src/chains/solana/context';

/**
 * The worker process: runs workflows/ and activities/ on TEMPORAL_TASK_QUEUE. It owns one relayer
 * key (RELAYER_PRIVATE_KEY) for every network it serves; no other process may sign with that key.
 */
async function main() {
  const config = loadConfig();
  const networks = buildNetworkTable(config.env);
  const log = createLogger(config.LOG_LEVEL, 'worker');
  const db = await openDatabase(config);
  const account = privateKeyToAccount(config.RELAYER_PRIVATE_KEY as `0x${string}`);

  const relayers = new Map<EvmNetworkId, Relayer>();
  for (const n of networks.values())
    if (n.enabled) relayers.set(n.id, new Relayer(n, account, db, { replaceAfterMs: config.RELAYER_REPLACE_AFTER_MS }));
  const relayerFor = (id: EvmNetworkId) => {
    const r = relayers.get(id);
    if (!r) throw new Error(`no relayer for network ${id}`);
    return r;
  };
  // Transactions this key signed before a crash but that never got a receipt are sent again first,
  // so later nonces are not stuck behind a gap.
  for (const r of relayers.values()) {
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
  log.info({ taskQueue: config.TEMPORAL_TASK_QUEUE, relayer: account.address, networks: [...relayers.keys(), ...solana] }, 'worker ready');
  await worker.run();
  await connection.close();
  await db.close();
}

main().catch((err) => {
  if (err instanceof ConfigError) console.error(err.message);
  else console.error(err);
  process.exit(1);
});
