import type { AuthContext } from '../auth/key-mode';
import { assertKeyModeAllows } from '../auth/key-mode';
import { isEvmNetworkId, type EvmNetwork } from '../chains/networks';
import type { ServiceDeps } from '../deps';
import type { Refusal } from '../schemes/scheme';
import { feeOnAmount, organizationFeeBps, payoutFor, platformFee, ZERO_ADDRESS } from './payout';
import { marketplaceFeeOf } from './marketplace-fee';
import type { PaymentRequirements } from '../x402/schemas';
import type { SettleRequest } from './run';
import type { SettlementBase } from './types';
import { mainnetAllowed } from '../chains/mainnet-gate';

/**
 * What the EVM schemes share at request time, written once: which networks settle for this caller,
 * and the payout and fee of a payment from our own records.
 */

/**
 * The network a payment may settle on: known (else `invalid_network`), allowed for the key's mode
 * (403 ApiError, before anything else is said about the network), enabled for settlement, and a
 * mainnet only while mainnets are on.
 */
export function settlementNetwork(
  deps: Pick<ServiceDeps, 'networks' | 'config'>,
  auth: AuthContext,
  name: string,
): EvmNetwork | { refused: 'invalid_network' } {
  const network = isEvmNetworkId(name) ? deps.networks.get(name) : undefined;
  if (!network) return { refused: 'invalid_network' };
  assertKeyModeAllows(auth, network);
  if (!network.enabled || network.permitOnly) return { refused: 'invalid_network' };
  if (!mainnetAllowed(deps.config, network)) return { refused: 'invalid_network' };
  return network;
}

/**
 * The base of an EVM settlement input: the organization's payout (or `creditedRecipient`; never the
 * payer itself), its fee on `amount`, and the marketplace fee `extra` asks for (refused with `invalid_payment_requirements` out of
 * bounds, or where the route cannot pay it: `marketplaceFee: false`).
 */
export async function evmSettlementBase(
  deps: ServiceDeps,
  req: SettleRequest,
  p: {
    workflowId: string;
    network: EvmNetwork['id'];
    payer: string;
    amount: bigint;
    extra: PaymentRequirements['extra'];
    marketplaceFee?: false;
  },
): Promise<Omit<SettlementBase, 'network'> | Refusal> {
  const network = deps.networks.get(p.network)!;
  const resolved = await payoutFor(req, network.testnet, p.extra?.creditedRecipient);
  if (!resolved) return { refused: 'payout_wallet_not_configured', network: p.network, payer: p.payer };
  const refuse = (message: string): Refusal => ({ refused: 'invalid_payment_requirements', network: p.network, payer: p.payer, message });
  // A payment to oneself moves nothing but our gas, at no cost to whoever repeats it (issue 39).
  if (resolved.payout.toLowerCase() === p.payer.toLowerCase()) return refuse('the payer is the payout wallet: a self-payment is refused');
  const { fee, feeRecipient } = platformFee(p.amount, resolved.org, deps);
  const marketplace = marketplaceFeeOf(p.extra, {
    facilitator: network.facilitator ?? ZERO_ADDRESS,
    organizationFeeBps: organizationFeeBps(resolved.org, deps),
  });
  if (marketplace && 'refused' in marketplace) return refuse(marketplace.refused);
  if (marketplace && p.marketplaceFee === false) return refuse('extra.platformFeeBps is not applied on this route; settle on one chain');
  return {
    workflowId: p.workflowId,
    requestId: req.requestId,
    organizationId: resolved.org.id,
    apiKeyId: req.auth.apiKeyId ?? '',
    parkAfterMs: deps.config.SETTLE_PARK_AFTER_MS,
    payer: p.payer,
    amount: p.amount.toString(),
    payout: resolved.payout,
    fee: fee.toString(),
    feeRecipient,
    ...(marketplace ? { platform: marketplace.platform, platformFee: feeOnAmount(p.amount, marketplace.bps).toString() } : {}),
  };
}
