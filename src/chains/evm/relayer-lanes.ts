import { keccak256, stringToBytes } from 'viem';
import { privateKeyToAddress } from 'viem/accounts';
import type { Config } from '../../config';

/** The worker's settlement lane keys: RELAYER_PRIVATE_KEYS, else RELAYER_PRIVATE_KEY alone; no key twice. */
export function relayerLaneKeys(config: Pick<Config, 'RELAYER_PRIVATE_KEY' | 'RELAYER_PRIVATE_KEYS'>): `0x${string}`[] {
  const keys = (config.RELAYER_PRIVATE_KEYS?.split(',') ?? [config.RELAYER_PRIVATE_KEY]).map((k) => k.trim() as `0x${string}`);
  const addresses = new Set(keys.map((k) => privateKeyToAddress(k)));
  if (addresses.size !== keys.length) throw new Error('RELAYER_PRIVATE_KEYS lists a key twice');
  return keys;
}

/**
 * The lane of one write-ahead id: a hash of the id, so every attempt of an activity (and every
 * worker with the same key list) sends that effect from the same key.
 */
export function laneOf(writeAheadId: string, lanes: number): number {
  return Number(BigInt(keccak256(stringToBytes(writeAheadId))) % BigInt(lanes));
}
