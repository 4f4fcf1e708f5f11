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
 * The lane of one settlement (its workflow id): a hash of the id, so every attempt of its activities
 * (and every worker with the same key list) sends and repairs its transaction with the same key.
 */
export function laneOf(laneKey: string, lanes: number): number {
  return Number(BigInt(keccak256(stringToBytes(laneKey))) % BigInt(lanes));
}
