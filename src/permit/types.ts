import type { Hex } from 'viem';
import type { EvmNetworkId } from '../chains/networks';
import type { PermitResponse } from './schema';

/**
 * Input of one permit workflow. It describes the permit completely and holds no secret (it is
 * visible in the Temporal UI; a used permit signature is public on-chain anyway).
 */
export interface PermitInput {
  workflowId: string;
  requestId?: string;
  organizationId: string;
  /** '' when the caller signed in with the session cookie. */
  apiKeyId: string;
  network: EvmNetworkId;
  token: string;
  owner: string;
  /** As requested; informational only (the on-chain permit's spender is the facilitator contract). */
  spender: string;
  recipient: string;
  value: string;
  deadline: string;
  v: 27 | 28;
  r: Hex;
  s: Hex;
}

/** Whose permit a finished workflow executed: a repeat must match it to be answered with its result. */
export interface PermitOwnerOf {
  organizationId: string;
  recipient: string;
  value: string;
}

/** What the workflow returns: the permit response plus whose request it was. */
export interface PermitOutcome extends PermitOwnerOf {
  response: PermitResponse;
}

/** Type of the ApplicationFailure a rejected permit ends with (nothing was broadcast). */
export const PERMIT_REJECTED = 'PermitRejected';
/** Details of that failure. */
export type PermitRejection = [PermitResponse, PermitOwnerOf];
