import type { Organization } from '../db/entities';
import type { Config } from '../config';
import type { SettlementBase } from '../schemes/scheme';
import type { Address } from 'viem';

export const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

/** What the organization's fee needs of our configuration. */
export type FeeDeps = { config: Pick<Config, 'PLATFORM_FEE_RECIPIENT'> };

/** The whole amount in basis points: the organization's and the marketplace's fees together stay within it. */
export const MAX_FEE_BPS = 10_000;

/** A fee of `bps` on `amount`, rounded down (the payout gets the remainder). */
export const feeOnAmount = (amount: bigint, bps: number): bigint => (amount * BigInt(bps)) / BigInt(MAX_FEE_BPS);

/** The organization's fee rate as applied: zero while `PLATFORM_FEE_RECIPIENT` is unset. */
export const organizationFeeBps = (org: Organization, deps: FeeDeps): number =>
  deps.config.PLATFORM_FEE_RECIPIENT ? org.platformFeeBps : 0;

/** The organization's platform fee on the amount that moves; zero (to the zero address) when unset. */
export function platformFee(amount: bigint, org: Organization, deps: FeeDeps): { fee: bigint; feeRecipient: string } {
  const bps = organizationFeeBps(org, deps);
  if (!bps) return { fee: 0n, feeRecipient: ZERO_ADDRESS };
  return { fee: feeOnAmount(amount, bps), feeRecipient: deps.config.PLATFORM_FEE_RECIPIENT! };
}

/** The contract's `Payout` of a settlement input: who gets what of the amount moved (inputs from before marketplace fees have none). */
export const contractPayout = (input: Pick<SettlementBase, 'payout' | 'fee' | 'feeRecipient' | 'platform' | 'platformFee'>) => ({
  payout: input.payout as Address,
  fee: BigInt(input.fee),
  feeRecipient: input.feeRecipient as Address,
  platformFee: BigInt(input.platformFee ?? '0'),
  platform: (input.platform ?? ZERO_ADDRESS) as Address,
});
