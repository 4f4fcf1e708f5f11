import { callerOrganization } from '../auth/organizations';
import type { Organization } from '../db/entities';
import type { ServiceDeps } from '../deps';
import type { SettleRequest } from './run';
import type { SettlementBase } from './types';
import type { Address } from 'viem';

export const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

/** The caller's organization and the wallet paid: `extra.creditedRecipient`, else the org's wallet for the mode. */
export async function payoutFor(
  req: Pick<SettleRequest, 'em' | 'auth'>,
  testnet: boolean,
  creditedRecipient: string | undefined,
): Promise<{ org: Organization; payout: string } | undefined> {
  const org = await callerOrganization(req.em, req.auth);
  const payout = creditedRecipient ?? (testnet ? org?.payoutWalletTest : org?.payoutWalletLive);
  return org && payout ? { org, payout } : undefined;
}

/** The whole amount in basis points: the organization's and the marketplace's fees together stay within it. */
export const MAX_FEE_BPS = 10_000;

/** A fee of `bps` on `amount`, rounded down (the payout gets the remainder). */
export const feeOnAmount = (amount: bigint, bps: number): bigint => (amount * BigInt(bps)) / BigInt(MAX_FEE_BPS);

/** The organization's fee rate as applied: zero while `PLATFORM_FEE_RECIPIENT` is unset. */
export const organizationFeeBps = (org: Organization, deps: Pick<ServiceDeps, 'config'>): number =>
  deps.config.PLATFORM_FEE_RECIPIENT ? org.platformFeeBps : 0;

/** The organization's platform fee on the amount that moves; zero (to the zero address) when unset. */
export function platformFee(amount: bigint, org: Organization, deps: Pick<ServiceDeps, 'config'>): { fee: bigint; feeRecipient: string } {
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
