import type { EvmNetworkId } from '../../chains/networks';
import type { OperatorAction } from '../../temporal/operator-decisions';
import type { ExactEvmPayload, PaymentRequirements, SettleResponse } from '../../x402/schemas';

/**
 * Input of one cross-chain EIP-3009 settlement (spec routing step 4 with a different destination).
 * Resolved by the API at request time, visible in the Temporal UI: no secrets.
 */
export interface CrossChainSettleInput {
  workflowId: string;
  requestId?: string;
  organizationId: string;
  apiKeyId: string;
  route: 'eip3009-crosschain';
  /** Source network (where the buyer signed and USDC is pulled and burned). */
  network: EvmNetworkId;
  destinationNetwork: EvmNetworkId;
  sourceDomain: number;
  destinationDomain: number;
  paymentPayload: ExactEvmPayload;
  paymentRequirements: PaymentRequirements;
  /** Paid on the destination: what arrived minus `fee`. */
  payout: string;
  /** Platform fee in base units, from the signed value (capped at what arrives). */
  fee: string;
  feeRecipient: string;
  /** The most the bridge may keep (BRIDGE_MAX_FEE_BPS of the value; a top-up: its buffered bridge fee quote). */
  maxBridgeFee: string;
  /** How long the bridge leg waits for an attestation before `needs_review` (default 6 h; top-ups: TOPUP_BRIDGE_TIMEOUT_MS). */
  attestationBudgetMs?: number;
}

/** Input of the bridge leg (child workflow `bridge:<sourceNetwork>:<sourceDomain>:<sourceTx>`). */
export interface BridgeTransferInput {
  bridgeId: string;
  settlementId: string;
  organizationId: string;
  payer: string;
  sourceNetwork: EvmNetworkId;
  destinationNetwork: EvmNetworkId;
  sourceDomain: number;
  destinationDomain: number;
  sourceTx: string;
  /**
   * The CCTP V2 burn message as emitted on the source chain (hex): its nonce is empty until the
   * attestation service assigns one, so the leg is keyed by the source transaction instead.
   */
  message: string;
  amount: string;
  payout: string;
  fee: string;
  feeRecipient: string;
  /** Attestation wait before `needs_review` (default 6 h). */
  attestationBudgetMs?: number;
}

export interface BridgeTransferResult {
  state: 'delivered' | 'needs_review';
  mintTx?: string;
  received?: string;
  bridgeFee?: string;
  fee?: string;
  payoutAmount?: string;
  error?: string;
}

export interface CrossChainOutcome {
  response: SettleResponse;
  organizationId: string;
  /** How the bridge leg ended (absent when the source transaction failed or the payment was refused). */
  bridge?: BridgeTransferResult;
  /** An abandoned leg's refund to the payer on the source network (operator action `abandon-bridge`). */
  refund?: BridgeRefund;
  /** Where an abandoned leg's message was delivered on the destination (the treasury), once its payer was refunded. */
  treasury?: TreasuryDelivery;
  /** Operator actions taken on this settlement (workflows/operator-actions.ts). */
  operatorActions?: OperatorAction[];
}

/** The source-network refund of an abandoned bridge leg: what our records owed, and its transaction. */
export interface BridgeRefund {
  payee: string;
  amount: string;
  refundTx: string;
}

/**
 * An abandoned leg's message delivered on the destination to the treasury (BRIDGE_TREASURY_ADDRESS):
 * what arrived and the transaction; `delivered: false` when someone else had delivered it, or the
 * delivery reverted (`error`).
 */
export interface TreasuryDelivery {
  treasury: string;
  delivered: boolean;
  amount?: string;
  deliveryTx?: string;
  error?: string;
}
