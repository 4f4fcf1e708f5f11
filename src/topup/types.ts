import type { Eip3009SettleInput } from '../schemes/eip3009/types';
import type { CrossChainSettleInput } from '../schemes/eip3009-crosschain/types';

/** The destination of every top-up: the merchant contract lives on Base. */
export const TOPUP_DESTINATION_NETWORK = 'base' as const;

/**
 * Input of one TopUpWorkflow (visible in the Temporal UI: no secrets). Amounts are decimal strings
 * of base units, computed once by the gateway (src/topup/amounts.ts) so every step agrees; on a
 * cross-chain source `bridgeFee`/`netAmount` are the quote, replaced by what the bridge actually kept
 * and delivered once the fill landed (the deposit credits exactly what arrived).
 */
export interface TopUpInput {
  workflowId: string;
  requestId?: string;
  merchant: string;
  merchantContract: string;
  buyer: string;
  payer: string;
  network: string; // source network
  nonce: string;
  grossAmount: string;
  fee: string;
  bridgeFee: string;
  netAmount: string;
  /** The gateway relayer wallet: the settlement's payout, the sender of deposit and refund. */
  relayer: string;
  /**
   * The settlement child workflow's input (id `settle:<network>:<payer>:<nonce>`): the same-chain
   * EIP-3009 settlement for `base`, the cross-chain one (burn on the source, mint and payout to the
   * relayer on Base) for the other sources.
   */
  settle: Eip3009SettleInput | CrossChainSettleInput;
  /** Epoch ms when the gateway accepted the payment. */
  createdAt: number;
  /** A deposit or refund unproven this long (ms) shows `needs_review`; absent: PARK_AFTER_MS (workflows/park.ts). */
  parkAfterMs?: number;
}

/** Top-up states (docs/decisions/topup-gateway.md). */
export type TopUpState =
  'settling' | 'depositing' | 'deposited' | 'refunding' | 'refunded' | 'failed' | 'deferred' | 'bridging' | 'needs_review';

export const FINAL_TOPUP_STATES: ReadonlySet<string> = new Set(['deposited', 'refunded', 'failed', 'needs_review']);

/** What the workflow returns: the final state (the record itself is in the database). */
export interface TopUpOutcome {
  state: TopUpState;
  errorReason?: string;
  /** Operator actions taken on this top-up (workflows/operator-actions.ts), in order. */
  operatorActions?: { action: string; operator: string; reason: string; at: string }[];
}
