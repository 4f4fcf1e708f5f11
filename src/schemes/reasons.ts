import { X402_SETTLE_REASON_STATUS } from '../x402/error-reasons';
import { PERMIT2_SETTLE_REASON_STATUS } from './permit2/reasons';

/** Every settle reason we emit, with the HTTP status POST /v1/settle answers for it: x402's, then each scheme's own table. */
export const SETTLE_REASON_STATUS = { ...X402_SETTLE_REASON_STATUS, ...PERMIT2_SETTLE_REASON_STATUS } as const;

export type SettleReason = keyof typeof SETTLE_REASON_STATUS;

export const settleStatusFor = (reason: string): number =>
  Object.hasOwn(SETTLE_REASON_STATUS, reason) ? SETTLE_REASON_STATUS[reason as SettleReason] : 400;
