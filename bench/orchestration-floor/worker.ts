/**
 * Worker process of the orchestration floor (bench/settle.ts starts it): the real config, database
 * and relayer modules of workers/main.ts, its own task queue and relayer key, and only the floor's
 * workflow (FLOOR_WORKFLOW_BUNDLE_PATH, bundled by the bench) and activity.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { privateKeyToAccount } from 'viem/accounts';
import { loadConfig } from '../../src/config';
import { buildNetworkTable } from '../../src/chains/networks';
import { Relayer } from '../../src/chains/evm/relayer';
import { openDatabase } from '../../src/db/orm';
import { workerTuning } from '../../src/temporal/worker-tuning';
import { temporalDataConverter } from '../../src/temporal/payload-codec';
import { createFloorActivities } from './activities';

async function main() {
  const config = loadConfig();
  const table = buildNetworkTable(config.env);
  const db = await openDatabase(config);
  const account = privateKeyToAccount(config.RELAYER_PRIVATE_KEY as `0x${string}`);
  // base-sepolia for the rows; optimism-sepolia for the bench's --warmup, which leaves the rows' chain as it was.
  const relayers = new Map<string, Relayer>();
  for (const id of ['base-sepolia', 'optimism-sepolia'] as const) {
    const network = table.get(id);
    if (!network?.enabled) throw new Error(`${id} is not configured`);
    relayers.set(id, new Relayer(network, account, db, { replaceAfterMs: config.RELAYER_REPLACE_AFTER_MS }));
  }
  const connection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS });
  const worker = await Worker.create({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    dataConverter: temporalDataConverter(config),
    workflowBundle: { codePath: process.env.FLOOR_WORKFLOW_BUNDLE_PATH! },
    ...workerTuning(config.WORKER_TASK_SLOTS),
    activities: createFloorActivities(relayers, config.RECEIPT_WAIT_MS),
  });
  console.log('worker ready');
  await worker.run();
  await connection.close();
  await db.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
