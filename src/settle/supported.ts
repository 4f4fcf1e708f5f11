import type { NetworkTable } from '../chains/networks';

export interface SupportedKind {
  x402Version: 1;
  scheme: 'exact' | 'upto';
  network: string;
  /** Solana kinds: the fee payer a buyer's transaction must name (as x402 advertises it). */
  extra?: { feePayer: string };
}

/**
 * GET /v1/supported, derived from the network table: on every enabled EVM network (mainnets only
 * with MAINNETS_ENABLED) `exact` (EIP-3009, or Permit2 on Permit2-only networks) and `upto`
 * (Permit2). Networks listed for POST /v1/permit only are not. (Solana joins as its route lands.)
 */
export function supportedKinds(networks: NetworkTable, mainnetsEnabled: boolean): SupportedKind[] {
  const kinds: SupportedKind[] = [];
  for (const n of networks.values()) {
    if (!n.enabled || n.permitOnly) continue;
    if (!n.testnet && !mainnetsEnabled) continue;
    kinds.push({ x402Version: 1, scheme: 'exact', network: n.id });
    kinds.push({ x402Version: 1, scheme: 'upto', network: n.id });
  }
  return kinds;
}
