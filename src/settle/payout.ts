import { Organization } from '../db/entities';
import type { ServiceDeps } from '../deps';
import type { SettleRequest } from './run';

export const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

/** The caller's organization and the wallet paid: `extra.creditedRecipient`, else the org's wallet for the mode. */
export async function payoutFor(
  req: Pick<SettleRequest, 'em' | 'auth'>,
  testnet: boolean,
  creditedRecipient: string | undefined,
): Promise<{ org: Organization; payout: string } | undefined> {
  const org = await req.em.findOne(Organization, { id: req.auth.organizationId });
  const payout = creditedRecipient ?? (testnet ? org?.payoutWalletTest : org?.payoutWalletLive);
  return org && payout ? { org, payout } : undefined;
}

/** The organization's platform fee on the amount that moves; zero (to the zero address) when unset. */
export function platformFee(amount: bigint, org: Organization, deps: Pick<ServiceDeps, 'config'>): { fee: bigint; feeRecipient: string } {
  const recipient = deps.config.PLATFORM_FEE_RECIPIENT;
  if (!recipient || !org.platformFeeBps) return { fee: 0n, feeRecipient: ZERO_ADDRESS };
  return { fee: (amount * BigInt(org.platformFeeBps)) / 10_000n, feeRecipient: recipient };
}
