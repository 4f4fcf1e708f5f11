/**
 * The authorization window cap (issue 14): an authorization may not outlive the requirements'
 * `maxTimeoutSeconds` by more than a small allowance for the buyer's clock. A longer window would let
 * a signed payment be held back and settled much later than the seller asked.
 */
export const WINDOW_ALLOWANCE_SECONDS = 60;

/** True when `validBefore` (unix seconds) is later than `now + maxTimeoutSeconds + allowance`. */
export const windowTooLong = (validBefore: bigint, nowSeconds: number, maxTimeoutSeconds: number): boolean =>
  validBefore > BigInt(nowSeconds + maxTimeoutSeconds + WINDOW_ALLOWANCE_SECONDS);
