import { laneOf, relayerLaneKeys } from '../../src/chains/evm/relayer-lanes';
import { loadConfig, ConfigError } from '../../src/config';

const K1 = `0x${'11'.repeat(32)}` as const;
const K2 = `0x${'22'.repeat(32)}` as const;

describe('relayer lanes', () => {
  test('the lane of a write-ahead id is a fixed function of the id (every retry, every worker)', () => {
    const id = 'settle:base-sepolia:0x9965507d1a55bcc2695c58ba16fb37d819b0a4dc:0xabc:settle';
    expect(laneOf(id, 4)).toBe(laneOf(id, 4));
    expect(laneOf(id, 1)).toBe(0);
  });

  test('ids spread over all lanes', () => {
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 400; i++) counts[laneOf(`settle:base-sepolia:0xpayer:0x${i.toString(16)}:settle`, 4)]++;
    for (const c of counts) expect(c).toBeGreaterThan(60); // 100 expected each
  });

  test('RELAYER_PRIVATE_KEYS gives the lanes; without it RELAYER_PRIVATE_KEY is the one lane', () => {
    expect(relayerLaneKeys(K1, undefined)).toEqual([K1]);
    expect(
      relayerLaneKeys(K1, loadConfig({ RELAYER_PRIVATE_KEY: K1, RELAYER_PRIVATE_KEYS: ` ${K1}, ${K2} ` }).RELAYER_PRIVATE_KEYS),
    ).toEqual([K1, K2]);
    expect(() => relayerLaneKeys(K1, `${K2},${K2}`)).toThrow(/twice/);
  });

  test('a malformed RELAYER_PRIVATE_KEYS stops start-up with its name', () => {
    expect(() => loadConfig({ RELAYER_PRIVATE_KEYS: `${K1},0x12` })).toThrow(ConfigError);
    expect(() => loadConfig({ RELAYER_PRIVATE_KEYS: `${K1},0x12` })).toThrow(/RELAYER_PRIVATE_KEYS/);
  });
});
