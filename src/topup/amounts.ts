/**
 * Exact top-up amount math in 6-decimal base units (bigint only). Pure: the quote, the 402
 * challenge, the request checks and the workflow input all use these, so gross, net and the merchant
 * balance change agree to the base unit.
 */

export interface FeeSchedule {
  /** Facilitator fee: `fixed + floor(gross * bps / 10000)`. */
  feeFixed: bigint;
  feeBps: bigint;
  /** Bridge fee deducted on cross-chain sources (a buffered quote or the configured fallback); 0 same-chain. */
  bridgeFee: bigint;
}

export const facilitatorFee = (gross: bigint, s: FeeSchedule): bigint => s.feeFixed + (gross * s.feeBps) / 10_000n;

/** What the buyer is credited for a gross payment; negative when the fees exceed it. */
export const netOf = (gross: bigint, s: FeeSchedule): bigint => gross - facilitatorFee(gross, s) - s.bridgeFee;

// net(gross) never decreases as gross grows (bps < 10000), so both searches below are exact.
const UPPER = 10n ** 30n;

/** The smallest gross whose net is at least `net`. */
export function grossForNet(net: bigint, s: FeeSchedule): bigint {
  let lo = 0n;
  let hi = UPPER;
  while (lo < hi) {
    const mid = (lo + hi) / 2n;
    if (netOf(mid, s) >= net) hi = mid;
    else lo = mid + 1n;
  }
  return lo;
}

/** The largest gross whose net is at most `net`. */
export function maxGrossForNet(net: bigint, s: FeeSchedule): bigint {
  return grossForNet(net + 1n, s) - 1n;
}

export interface BuyerPosition {
  /** available + reserved on the merchant contract */
  balance: bigint;
  creditLimit: bigint;
  /** `minFirstDeposit` while the buyer has no balance, else 0 */
  minBuyerDeposit: bigint;
}

export interface SourceLimits {
  /** Gateway-wide gross bounds per top-up (config). */
  minAmount: bigint;
  maxAmount: bigint;
}

export interface Bounds {
  minAmount: bigint;
  maxAmount: bigint;
  headroom: bigint;
  /** False when no top-up can be credited (the headroom is below the smallest possible deposit). */
  open: boolean;
}

/**
 * Accepted gross range of one source for one buyer: the minimum credits at least the merchant's
 * minimum buyer deposit (and 1 unit) after fees; the maximum credits at most the headroom.
 * A closed range reports maxAmount 0. `headroomFees` is the schedule the maximum is computed with:
 * cross-chain sources pass the one without bridge fee, since the bridge may keep less than quoted
 * and the credit must fit the headroom whatever it keeps.
 */
export function boundsFor(position: BuyerPosition, limits: SourceLimits, s: FeeSchedule, headroomFees: FeeSchedule = s): Bounds {
  const headroom = position.creditLimit > position.balance ? position.creditLimit - position.balance : 0n;
  const minNet = position.minBuyerDeposit > 1n ? position.minBuyerDeposit : 1n;
  const minAmount = bigMax(limits.minAmount, grossForNet(minNet, s));
  const byHeadroom = maxGrossForNet(headroom, headroomFees);
  const maxAmount = bigMin(limits.maxAmount, byHeadroom);
  const open = headroom >= minNet && maxAmount >= minAmount;
  return { minAmount, maxAmount: open ? maxAmount : 0n, headroom, open };
}

export type AmountVerdict = { ok: true } | { ok: false; reason: 'amount_too_low' | 'amount_too_high' | 'credit_limit_reached' };

/** The spec's amount rules, in order: below the minimum, above the gateway maximum, beyond the headroom. */
export function checkAmount(
  gross: bigint,
  bounds: Bounds,
  limits: SourceLimits,
  s: FeeSchedule,
  headroomFees: FeeSchedule = s,
): AmountVerdict {
  if (gross < bounds.minAmount) return { ok: false, reason: 'amount_too_low' };
  if (gross > limits.maxAmount) return { ok: false, reason: 'amount_too_high' };
  if (!bounds.open || netOf(gross, headroomFees) > bounds.headroom) return { ok: false, reason: 'credit_limit_reached' };
  return { ok: true };
}

/** A bridge fee quote with the safety buffer applied (rounded up). */
export const bufferedBridgeFee = (quote: bigint, bufferBps: bigint): bigint => (quote * (10_000n + bufferBps) + 9_999n) / 10_000n;

const bigMax = (a: bigint, b: bigint) => (a > b ? a : b);
const bigMin = (a: bigint, b: bigint) => (a < b ? a : b);
