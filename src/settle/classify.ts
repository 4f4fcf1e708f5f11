import { isSolanaNetworkId } from '../chains/networks';
import type { PaymentRequirements } from '../x402/schemas';

export type SettleRoute = 'solana' | 'batched' | 'permit2' | 'eip3009';

/**
 * Picks the settlement route in the spec's order ("POST /v1/settle", routing steps 1-4):
 * Solana network, then the batched gateway marker, then a payload that parses as Permit2,
 * else EIP-3009. A payload that looks like two kinds takes the earlier step.
 */
export function classifySettleRoute(
  payload: { network: string; payload: Record<string, unknown> },
  requirements: Pick<PaymentRequirements, 'extra'>,
): SettleRoute {
  if (isSolanaNetworkId(payload.network)) return 'solana';
  if (requirements.extra?.name === 'GatewayWalletBatched' && requirements.extra?.version === '1') return 'batched';
  const p = payload.payload;
  if (p && typeof p === 'object' && 'permit' in p && 'witness' in p && 'owner' in p) return 'permit2';
  return 'eip3009';
}
