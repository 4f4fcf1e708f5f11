import type { NetworkTable } from '../chains/networks';

export interface SupportedKind {
  x402Version: 1;
  scheme: 'exact' | 'upto';
  network: string;
  /** Solana kinds: the fee payer a buyer's transaction must name (as x402 advertises it). */
  extra?: { feePayer: string };
}

/**
 * GET /v1/supported, derived from the network table: `exact` on every enabled network where
 * EIP-3009 settlement works. (`upto`, Permit2-only networks and Solana join as their routes land.)
 */
export function supportedKinds(networks: NetworkTable, mainnetsEnabled: boolean): SupportedKind[] {
  const kinds: SupportedKind[] = [];
  for (const n of networks.values()) {
    if (!n.enabled || n.permitOnly || n.permit2Only) continue;
    if (!n.testnet && !mainnetsEnabled) continue;
    kinds.push({ x402Version: 1, scheme: 'exact', network: n.id });
  }
  return kinds;
}
