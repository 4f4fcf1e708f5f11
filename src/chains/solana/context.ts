import type { Keypair } from '@solana/web3.js';
import { buildSolanaNetworkTable, type SolanaNetwork, type SolanaNetworkId } from '../networks';
import { solanaFeePayerFor } from './fee-payer';
import { connectSolanaRpc, type SolanaRpc } from './rpc';

/** A Solana network the service settles on: table entry, our fee payer, and its RPC. */
export interface SolanaNetworkContext {
  network: SolanaNetwork;
  feePayer: Keypair;
  rpc: SolanaRpc;
}

/**
 * Solana networks usable with this configuration (RPC URL and fee payer both known), built once per
 * environment object. The API uses only `feePayer.publicKey`; the worker also signs with it.
 */
export function solanaNetworks(config: {
  env: Record<string, string | undefined>;
  SOLANA_FEE_PAYER_KEY?: string;
}): ReadonlyMap<SolanaNetworkId, SolanaNetworkContext> {
  const cached = CACHE.get(config.env);
  if (cached) return cached;
  const out = new Map<SolanaNetworkId, SolanaNetworkContext>();
  for (const network of buildSolanaNetworkTable(config.env).values()) {
    const feePayer = solanaFeePayerFor(network, config.SOLANA_FEE_PAYER_KEY);
    if (!network.enabled || !network.rpcUrl || !feePayer) continue;
    out.set(network.id, { network, feePayer, rpc: connectSolanaRpc(network.rpcUrl) });
  }
  CACHE.set(config.env, out);
  return out;
}

const CACHE = new WeakMap<object, ReadonlyMap<SolanaNetworkId, SolanaNetworkContext>>();
