import type { Address } from 'viem';
import type { EvmNetwork, EvmNetworkId } from '../chains/networks';
import type { PaymentRequirements } from '../x402/schemas';
import {
  boundsFor,
  bufferedBridgeFee,
  checkAmount,
  type AmountVerdict,
  type Bounds,
  type BuyerPosition,
  type FeeSchedule,
  type SourceLimits,
} from './amounts';
import type { TopupConfig, TopupSourceId } from './config';
import type { TopupDeps } from './context';
import { readBuyerPosition, tokenDomain } from './merchant-reads';
import { crossChainRouteOf } from '../schemes/eip3009-crosschain/route';
import { TOPUP_DESTINATION_NETWORK } from './types';

/** One source network of a top-up, with its fee schedule and accepted gross range for a buyer. */
export interface SourceQuote {
  network: EvmNetwork;
  fees: FeeSchedule;
  limits: SourceLimits;
  bounds: Bounds;
}

export { TopupUnavailable } from './unavailable';
import { TopupUnavailable } from './unavailable';

export const destinationOf = (deps: Pick<TopupDeps, 'networks'>): EvmNetwork => {
  const n = deps.networks.get(TOPUP_DESTINATION_NETWORK);
  if (!n?.enabled || !n.usdc) throw new TopupUnavailable('the destination network base is not configured');
  return n;
};

/**
 * Fee schedule of a source: the facilitator fee everywhere; cross-chain sources also deduct the
 * bridge fee, quoted with a safety buffer from the configured fallback (the spec allows a static
 * fallback; Circle's fee endpoint is not read yet). The buffered quote is also the burn's
 * `maxFee`, so the bridge can never keep more than the quote.
 */
export function feesFor(source: TopupSourceId, c: TopupConfig): FeeSchedule {
  const crossChain = source !== TOPUP_DESTINATION_NETWORK;
  return {
    feeFixed: c.TOPUP_FEE_FIXED,
    feeBps: c.TOPUP_FEE_BPS,
    bridgeFee: crossChain ? bufferedBridgeFee(c.TOPUP_BRIDGE_FEE_FALLBACK, c.TOPUP_BRIDGE_FEE_BUFFER_BPS) : 0n,
  };
}

/** The same schedule without bridge fee: what the headroom bound uses (the bridge may keep less). */
const withoutBridgeFee = (s: FeeSchedule): FeeSchedule => ({ ...s, bridgeFee: 0n });

/**
 * The bridge route of a cross-chain source to `base` (same rules as `POST /v1/settle` routing step
 * 4), or undefined when it has none: no CCTP domain or bridge contracts, or a token CCTP does not
 * carry (robinhood's USDG; docs/decisions/topup-sources.md).
 */
export function bridgeRouteOf(deps: Pick<TopupDeps, 'networks'>, source: EvmNetwork) {
  const destination = deps.networks.get(TOPUP_DESTINATION_NETWORK);
  if (!destination?.chainId) return undefined;
  // The gateway serves mainnet ids (its destination is `base`); MAINNETS_ENABLED governs the API only.
  const route = crossChainRouteOf(source, destination.chainId, deps.networks, { mainnetsEnabled: true });
  return route.kind === 'cross-chain' ? route : undefined;
}

/**
 * A source network by id when it can take a payment now, else why not (the `wrong_network` message):
 * not a source of this gateway, not configured (RPC, token, facilitator), or not bridgeable to Base.
 */
export function sourceOf(deps: Pick<TopupDeps, 'networks' | 'topup'>, id: string): { network: EvmNetwork } | { refusal: string } {
  const configured = (deps.topup.TOPUP_SOURCES as readonly string[]).includes(id);
  const n = configured ? deps.networks.get(id as EvmNetworkId) : undefined;
  if (!n) return { refusal: `network ${id} is not a top-up source here` };
  if (n.stablecoin !== 'USDC') {
    return { refusal: `network ${id} pays in ${n.stablecoin}, which the bridge to base (CCTP) cannot carry: it cannot be a top-up source` };
  }
  if (!n.enabled || !n.usdc || !n.facilitator) return { refusal: `network ${id} is not configured on this gateway` };
  if (n.id !== TOPUP_DESTINATION_NETWORK && !bridgeRouteOf(deps, n)) return { refusal: `network ${id} cannot be bridged to base here` };
  return { network: n };
}

/** The configured sources that can take a payment now, in configuration order. */
export function eligibleSources(deps: Pick<TopupDeps, 'networks' | 'topup'>): EvmNetwork[] {
  return deps.topup.TOPUP_SOURCES.flatMap((id) => {
    const s = sourceOf(deps, id);
    return 'network' in s ? [s.network] : [];
  });
}

export const quoteSource = (network: EvmNetwork, position: BuyerPosition, c: TopupConfig): SourceQuote => {
  const fees = feesFor(network.id as TopupSourceId, c);
  const limits = { minAmount: c.TOPUP_MIN_AMOUNT, maxAmount: c.TOPUP_MAX_AMOUNT };
  return { network, fees, limits, bounds: boundsFor(position, limits, fees, withoutBridgeFee(fees)) };
};

export const verdictFor = (q: SourceQuote, gross: bigint): AmountVerdict =>
  checkAmount(gross, q.bounds, q.limits, q.fees, withoutBridgeFee(q.fees));

export const resourceUrl = (c: TopupConfig) => `${c.topupUrl}/v1/${c.TOPUP_MERCHANT_ID}/topups`;

/** The payment requirement of one source for `amount` gross, as the 402 challenge lists it. */
export async function requirementFor(
  deps: Pick<TopupDeps, 'topup' | 'networks'>,
  network: EvmNetwork,
  amount: bigint,
): Promise<PaymentRequirements> {
  const domain = await tokenDomain(network);
  const crossChain = network.id !== TOPUP_DESTINATION_NETWORK;
  return {
    scheme: 'exact',
    network: network.id,
    maxAmountRequired: amount.toString(),
    resource: resourceUrl(deps.topup),
    description: `Top-up of your ${deps.topup.TOPUP_MERCHANT_ID} balance`,
    mimeType: 'application/json',
    payTo: network.facilitator as Address,
    maxTimeoutSeconds: deps.topup.TOPUP_MAX_TIMEOUT_SECONDS,
    asset: network.usdc as Address,
    extra: {
      name: domain.name,
      version: domain.version,
      ...(crossChain ? { destinationChainId: destinationOf(deps).chainId } : {}),
    },
  };
}

export const sourceEntry = (q: SourceQuote) => ({
  network: q.network.id,
  evmChainId: q.network.chainId!,
  minAmount: q.bounds.minAmount.toString(),
  maxAmount: q.bounds.maxAmount.toString(),
});

/** Position and per-source quotes of one buyer (a fresh buyer when unknown). */
export async function quoteAll(deps: TopupDeps, buyer?: string): Promise<{ position: BuyerPosition; quotes: SourceQuote[] }> {
  const position = await readBuyerPosition(destinationOf(deps), deps.topup.TOPUP_MERCHANT_CONTRACT as Address, buyer);
  return { position, quotes: eligibleSources(deps).map((n) => quoteSource(n, position, deps.topup)) };
}
