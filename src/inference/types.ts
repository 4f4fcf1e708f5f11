import type { EvmNetworkId } from '../chains/networks';

/**
 * Shared by the API, the refund workflow and its activities (pure: workflows import it).
 */

/**
 * Organization id of the service's own internal settlements (paid chat). Not a UUID, so no real
 * organization can ever have it; its settlements are found in the settlements table by this id.
 */
export const INFERENCE_ORGANIZATION_ID = 'service:inference';

/** Charge id of one paid chat request: the authorization it was paid with. */
export const chatChargeId = (network: string, payer: string, nonce: string) =>
  `chat:${network}:${payer.toLowerCase()}:${nonce.toLowerCase()}`;

/** Refund workflow id: one refund per charge, ever. */
export const refundWorkflowId = (chargeId: string) => `refund:${chargeId}`;

/** The charge guard: the delayed refund workflow that refunds a charge an API process left behind. */
export const chargeGuardWorkflowId = (chargeId: string) => `chat-guard:${chargeId}`;

/** Input of the refund workflow: what to pay back, to whom, from which wallet. No secret. */
export interface RefundInput {
  workflowId: string;
  chargeId: string;
  settlementId: string;
  network: EvmNetworkId;
  payer: string;
  amount: string;
  asset: string;
  /** Wallet the charge was paid to; the worker's relayer must be this account to sign the refund. */
  revenueWallet: string;
  /** Why the charge is refunded (provider failure message), recorded in the ledger. */
  reason: string;
  requestId?: string;
  /** A refund transaction unproven this long (ms) waits in `needs_review`; absent: PARK_AFTER_MS (workflows/park.ts). */
  parkAfterMs?: number;
  /**
   * The charge guard (started with a delay by the API when it claims the charge): refund only if the
   * charge is still `settling` or `charged`, i.e. no API process finished it. `workflowId` stays the
   * refund workflow's id, so both paths share one write-ahead refund transfer.
   */
  onlyIfStale?: boolean;
}

/**
 * While a paid chat streams, its API process touches the charge row every CHARGE_HEARTBEAT_MS; the
 * charge guard takes a `charged` row touched within CHARGE_ALIVE_MS for a live stream and waits for it
 * (activities/refund.ts claimStaleCharge), so a reply being read is never refunded by the guard.
 */
export const CHARGE_HEARTBEAT_MS = 5_000;
export const CHARGE_ALIVE_MS = 20_000;

export interface RefundOutcome {
  state: 'refunded' | 'not_charged' | 'refund_failed' | 'not_owed';
  refundTx: string;
  /** Every operator action taken (a refund that reverted and was sent again), as in memo `operatorActions`. */
  operatorActions?: { action: string; operator: string; reason: string; at: string }[];
}
