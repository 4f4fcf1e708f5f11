import type { EvmNetworkId } from '../chains/networks';

/**
 * Input of one gateway-wallet withdrawal workflow. No secret: visible in the Temporal UI. The
 * depositor is the facilitator's own account in the gateway wallet: the worker's relayer address.
 */
export interface WithdrawalInput {
  workflowId: string;
  requestId?: string;
  organizationId: string;
  apiKeyId: string;
  network: EvmNetworkId;
  gatewayWallet: string;
  token: string;
  depositor: string;
  amount: string;
  /**
   * The gateway wallet's `withdrawalDelay()` (blocks) when the API started this withdrawal: the spec's
   * "7 days" is whatever the contract enforces. Informational; absent on workflows started before it.
   */
  withdrawalDelayBlocks?: string;
  /** Sleep between block-number checks while waiting for `withdrawalBlock`. */
  pollMs: number;
  /** A transaction unproven this long (ms) shows `needs_review`; absent: PARK_AFTER_MS (workflows/park.ts). */
  parkAfterMs?: number;
  /** Set when the workflow continued as new after initiating (a long wait). */
  resume?: { initiateTransaction: string };
}

export type WithdrawalState = 'initiating' | 'waiting' | 'withdrawing' | 'withdrawn' | 'failed';

/** The withdrawal record, as GET /v1/gateway/withdrawals/:id answers it. */
export interface WithdrawalRecord {
  id: string;
  network: string;
  gatewayWallet: string;
  token: string;
  depositor: string;
  amount: string;
  state: WithdrawalState;
  initiateTransaction: string | null;
  /** The contract's withdrawal delay in blocks, as last read from the chain. */
  withdrawalDelayBlocks: string | null;
  withdrawalBlock: string | null;
  withdrawTransaction: string | null;
  errorReason: string | null;
  message: string | null;
}

export const WITHDRAWAL_ROUTE = 'withdrawal';
