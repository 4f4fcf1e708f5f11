import { createHash } from 'node:crypto';
import { Keypair } from '@solana/web3.js';
import { base58Decode } from './base58';
import { ConfigError } from '../../config';
import type { SolanaNetwork } from '../networks';

/**
 * The service's Solana fee payer. Its secret comes from config `SOLANA_FEE_PAYER_KEY` only; it never
 * enters workflow inputs, results or logs (activities sign with it inside the worker process).
 *
 * DEVNET ONLY: without `SOLANA_FEE_PAYER_KEY`, solana-devnet uses a key derived from a public seed, so
 * the local stack works with zero setup. Anyone can derive it: never fund it on a real cluster.
 * Mainnet `solana` has no default and stays disabled without a configured key.
 */
export const DEVNET_SOLANA_FEE_PAYER = Keypair.fromSeed(createHash('sha256').update('x402 devnet solana fee payer').digest());

/** Parses a Solana secret key (base58 of 64 bytes, or the JSON byte array of `solana-keygen`). */
export function parseSolanaSecretKey(raw: string): Keypair {
  try {
    const bytes = raw.trim().startsWith('[') ? Uint8Array.from(JSON.parse(raw) as number[]) : base58Decode(raw.trim());
    return Keypair.fromSecretKey(bytes);
  } catch {
    // Never echo the value: it is a secret.
    throw new ConfigError('Invalid configuration:\n  SOLANA_FEE_PAYER_KEY: not a valid 64-byte Solana secret key');
  }
}

/** The fee payer of `network`, or undefined when none is configured (the network is then unsupported). */
export function solanaFeePayerFor(network: Pick<SolanaNetwork, 'testnet'>, configuredKey: string | undefined): Keypair | undefined {
  if (configuredKey) return parseSolanaSecretKey(configuredKey);
  return network.testnet ? DEVNET_SOLANA_FEE_PAYER : undefined;
}
