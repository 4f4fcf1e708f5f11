/**
 * Ethereum gas protection (spec Limits): a top-up settlement on `ethereum` is not broadcast when the
 * estimated L1 gas cost exceeds the facilitator fee, or when an input of that estimate is missing.
 * Pure; the activity `checkSettlementGas` feeds it the chain's fee data and the configured ETH price.
 */
export interface GasInputs {
  /** Gas units of the settle transaction (estimate). */
  gasUnits?: bigint;
  /** maxFeePerGas in wei. */
  maxFeePerGas?: bigint;
  /** Price of 1 ETH in USDC base units (6 decimals), e.g. 3000 USDC = 3_000_000_000n. */
  ethPriceUsdc?: bigint;
  /** Facilitator fee of this top-up in USDC base units. */
  fee: bigint;
}

export type GasVerdict =
  | { broadcast: true; costUsdc: bigint }
  | { broadcast: false; reason: 'gas_price_unavailable' }
  | { broadcast: false; reason: 'gas_cost_exceeds_fee'; costUsdc: bigint };

export function l1GasVerdict(i: GasInputs): GasVerdict {
  if (!i.gasUnits || !i.maxFeePerGas || !i.ethPriceUsdc) return { broadcast: false, reason: 'gas_price_unavailable' };
  // wei * (USDC units per ETH) / 1e18, rounded up: never underestimate the cost.
  const costUsdc = (i.gasUnits * i.maxFeePerGas * i.ethPriceUsdc + 10n ** 18n - 1n) / 10n ** 18n;
  if (costUsdc > i.fee) return { broadcast: false, reason: 'gas_cost_exceeds_fee', costUsdc };
  return { broadcast: true, costUsdc };
}

/** Networks where the rule applies. */
export const GAS_PROTECTED_NETWORKS: ReadonlySet<string> = new Set(['ethereum']);
