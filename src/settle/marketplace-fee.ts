import { isAddress } from 'viem';
import { MAX_FEE_BPS, ZERO_ADDRESS } from './payout';

/**
 * The marketplace fee of the spec's `extra.platform` / `extra.platformFeeBps`: a platform that sells
 * for its sellers names its wallet and its cut in the payment requirements it issues, and the
 * facilitator contract pays that cut in the settling transaction (docs/decisions/marketplace-fee.md).
 */

export type MarketplaceFee = { platform: string; bps: number } | { refused: string };

/** `extra.platformFeeBps` as an integer: a JSON integer or a decimal string (the spec gives no type). */
function bpsOf(raw: unknown): number | undefined {
  if (typeof raw === 'number') return Number.isInteger(raw) ? raw : undefined;
  if (typeof raw === 'string' && /^[0-9]{1,5}$/.test(raw)) return Number(raw);
  return undefined;
}

/**
 * The marketplace fee asked for by `extra`, undefined when none; a refusal (its message) when the
 * values are out of bounds: both fields go together, the wallet is a real address other than the
 * facilitator contract (whose balance nobody could take out), and the cut is 0..10000 bps including
 * the organization's own fee.
 */
export function marketplaceFeeOf(
  extra: { platform?: unknown; platformFeeBps?: unknown } | null | undefined,
  ctx: { facilitator: string; organizationFeeBps: number },
): MarketplaceFee | undefined {
  if (extra?.platform === undefined && extra?.platformFeeBps === undefined) return undefined;
  const { platform, platformFeeBps } = extra;
  if (platform === undefined || platformFeeBps === undefined) {
    return { refused: 'extra.platform and extra.platformFeeBps must be given together' };
  }
  if (typeof platform !== 'string' || !/^0x[a-fA-F0-9]{40}$/.test(platform) || !isAddress(platform, { strict: false })) {
    return { refused: 'extra.platform must be a 0x-prefixed 20-byte hex address' };
  }
  if (platform.toLowerCase() === ZERO_ADDRESS || platform.toLowerCase() === ctx.facilitator.toLowerCase()) {
    return { refused: 'extra.platform must be a wallet, not the zero address or the facilitator contract' };
  }
  const bps = bpsOf(platformFeeBps);
  if (bps === undefined || bps < 0 || bps > MAX_FEE_BPS) {
    return { refused: `extra.platformFeeBps must be an integer from 0 to ${MAX_FEE_BPS}` };
  }
  if (bps + ctx.organizationFeeBps > MAX_FEE_BPS) {
    return { refused: `extra.platformFeeBps plus the organization's fee (${ctx.organizationFeeBps} bps) exceeds ${MAX_FEE_BPS} bps` };
  }
  return { platform, bps };
}
