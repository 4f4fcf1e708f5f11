import { rpc } from '../../devnet/anvil';
import { readStackInfo } from './stack-info';

/**
 * The integration project's safety net (`setupFilesAfterEnv`): whatever a test did to the shared
 * chains' mining, and however it ended, the next test finds every chain of the stack mining each
 * transaction again: a test that failed while its chain was paused cannot stall every later test of
 * its shard.
 */
afterEach(async () => {
  const { chains } = readStackInfo();
  await Promise.all(Object.values(chains).map((c) => rpc(c.rpcUrl, 'evm_setAutomine', [true])));
});
