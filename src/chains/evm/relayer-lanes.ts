import { keccak256, stringToBytes } from 'viem';
import { privateKeyToAddress } from 'viem/accounts';

/** The worker's settlement lane keys: RELAYER_PRIVATE_KEYS, else the relayer key alone; no key twice. */
export function relayerLaneKeys(relayer: `0x${string}`, list: string | undefined): `0x${string}`[] {
  const keys = (list?.split(',') ?? [relayer]).map((k) => k.trim() as `0x${string}`);
  const addresses = new Set(keys.map((k) => privateKeyToAddress(k)));
  if (addresses.size !== keys.length) throw new Error('lists a key twice');
  return keys;
}

/**
 * The lane of one settlement (its workflow id): a hash of the id, so every attempt of its activities
 * (and every worker with the same key list) sends and repairs its transaction with the same key.
 */
export function laneOf(laneKey: string, lanes: number): number {
  if (lanes === 1) return 0; // the usual case: no hash (it showed in the worker's CPU profile)
  return Number(BigInt(keccak256(stringToBytes(laneKey))) % BigInt(lanes));
}
