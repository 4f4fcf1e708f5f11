import { ApplicationFailure } from '@temporalio/common';
import type { SettleResponse } from '../x402/schemas';
import type { Eip3009SettleInput } from '../schemes/eip3009/types';
import type { Permit2SettleInput } from '../schemes/permit2/types';
import type { SolanaSettleInput } from '../schemes/solana/types';
import type { SettlementBase } from '../schemes/scheme';

/** The input of the one settlement skeleton (workflows/settlement.ts), told apart by `route`. */
export type SettlementInput = Eip3009SettleInput | Permit2SettleInput | SolanaSettleInput;

/** What the workflow returns: the settle response plus whose payment it was. */
export interface SettleOutcome {
  response: SettleResponse;
  organizationId: string;
}

/**
 * Attempts at verification before a settlement gives up (the chain stays down): nothing was sent, so
 * the request fails without being a rejection. The workflow's retry policy and the one-activity fast
 * path (activities/settlement.ts settlePayment) both count to it.
 */
export const VERIFY_ATTEMPTS = 5;

/** Details of the ApplicationFailure a rejected settlement ends with (nothing was broadcast). */
export const SETTLEMENT_REJECTED = 'SettlementRejected';

/**
 * Whether a failure wraps a settlement workflow's SettlementRejected failure (a child-workflow
 * failure inside workflows, WorkflowFailedError in the API), with the settle response it carries.
 * Pure: workflows use it too.
 */
export function settlementRejection(err: unknown): { response?: SettleResponse } | undefined {
  const cause = err instanceof Error ? (err as { cause?: unknown }).cause : undefined;
  if (!(cause instanceof ApplicationFailure) || cause.type !== SETTLEMENT_REJECTED) return undefined;
  return { response: cause.details?.[0] as SettleResponse | undefined };
}

/** The settle response of a payment refused before any transaction (no hash). Pure: workflows use it too. */
export const rejectedResponse = (input: Pick<SettlementBase, 'network' | 'payer'>, reason: string): SettleResponse => ({
  success: false,
  errorReason: reason,
  transaction: '',
  network: input.network,
  payer: input.payer,
});
