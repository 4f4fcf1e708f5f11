import { privateKeyToAddress } from 'viem/accounts';
import { CLUSTER_WORKERS } from '../../devnet/cluster-plan';
import { DEVNET_RELAYER_ADDRESS, loadConfig } from '../../src/config';
import { workerKeys } from '../../src/production';

describe('the cluster workers (devnet/cluster-plan.ts)', () => {
  const keys = CLUSTER_WORKERS.map((w) => workerKeys(loadConfig({ NODE_ENV: 'development', ...w.env })));

  test("every worker's role keys are the wallets the API and gateway name (the depositor is the API's RELAYER_ADDRESS)", () => {
    expect(CLUSTER_WORKERS.map((w) => w.name)).toEqual(['worker-1', 'worker-2']);
    for (const k of keys) {
      expect(privateKeyToAddress(k.relayer)).toBe(DEVNET_RELAYER_ADDRESS);
      expect(privateKeyToAddress(k.revenue)).toBe(DEVNET_RELAYER_ADDRESS);
      expect(privateKeyToAddress(k.topupRelayer)).toBe(DEVNET_RELAYER_ADDRESS);
    }
  });

  test('each worker has two lanes of its own, none shared with the other', () => {
    const lanes = keys.map((k) => k.lanes.map((l) => privateKeyToAddress(l)));
    expect(lanes.map((l) => l.length)).toEqual([2, 2]);
    expect(new Set(lanes.flat()).size).toBe(4);
    expect(lanes).toEqual(CLUSTER_WORKERS.map((w) => w.lanes.map((k) => privateKeyToAddress(k))));
  });
});
