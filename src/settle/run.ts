import type { EntityManager } from '@mikro-orm/core';
import type { ServiceDeps } from '../deps';
import type { AuthContext } from '../auth/key-mode';
import { Organization, Settlement } from '../db/entities';
import { observeWorkflowStart } from '../observability/workflow-starts';
import { resultBefore, startOrAttach } from '../temporal/start-or-attach';
import { X402Kind, X402Network, X402Organization, X402Payer, X402State } from '../temporal/search-attributes';
import { settleStatusFor, type SettleReason } from '../x402/error-reasons';
import type { SettleResponse } from '../x402/schemas';
import { settlementRejection, type SettleOutcome } from './types';

/**
 * What every settle route handler shares once its payload is parsed: the payout and fee, the
 * short-circuit for settled payments, start-or-attach of its workflow, the bounded wait and the
 * 202 pending answer. Kept apart from settle-service.ts so route handlers can import it without a cycle.
 */

export interface SettleReply {
  status: number;
  body: SettleResponse;
}

/** An authenticated POST /v1/settle request, as every route handler receives it. */
export interface SettleRequest {
  em: EntityManager;
  auth: AuthContext;
  requestId: string;
  body: unknown;
}

export type SettleHandler = (deps: ServiceDeps, req: SettleRequest) => Promise<SettleReply>;

export const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';
const FINAL_STATES = new Set(['settled', 'failed']);

export const settleFailure = (reason: SettleReason | string, network = '', payer?: string): SettleReply => ({
  status: settleStatusFor(reason),
  body: { success: false, errorReason: reason, transaction: '', network, ...(payer ? { payer } : {}) },
});

/** The caller's organization and the wallet paid: `extra.creditedRecipient`, else the org's wallet for the mode. */
export async function payoutFor(
  req: SettleRequest,
  testnet: boolean,
  creditedRecipient: string | undefined,
): Promise<{ org: Organization; payout: string } | undefined> {
  const org = await req.em.findOne(Organization, { id: req.auth.organizationId });
  const payout = creditedRecipient ?? (testnet ? org?.payoutWalletTest : org?.payoutWalletLive);
  return org && payout ? { org, payout } : undefined;
}

/** The organization's platform fee on the amount that moves; zero (to the zero address) when unset. */
export function platformFee(amount: bigint, org: Organization, deps: Pick<ServiceDeps, 'config'>): { fee: bigint; feeRecipient: string } {
  const recipient = deps.config.PLATFORM_FEE_RECIPIENT;
  if (!recipient || !org.platformFeeBps) return { fee: 0n, feeRecipient: ZERO_ADDRESS };
  return { fee: (amount * BigInt(org.platformFeeBps)) / 10_000n, feeRecipient: recipient };
}

/** The recorded answer of a payment that already reached a final state (Temporal retention is finite). */
export async function recordedSettlement(req: SettleRequest, workflowId: string, network: string): Promise<SettleReply | undefined> {
  const known = await req.em.findOne(Settlement, { id: workflowId });
  if (!known || !FINAL_STATES.has(known.state) || !known.response) return undefined;
  return replyFor(JSON.parse(known.response) as SettleResponse, known.organizationId, req.auth, network);
}

export interface SettlementRun {
  workflowType: string;
  workflowId: string;
  input: { organizationId: string };
  network: string;
  payer: string;
}

/**
 * Starts (or attaches to) the settlement workflow and waits up to SETTLE_WAIT_MS: the final answer,
 * the rejection it failed with, or 202 `settlement_pending` with the transaction hash once recorded
 * (a repeat of the request attaches to the same workflow).
 */
export async function runSettlement(deps: ServiceDeps, req: SettleRequest, run: SettlementRun): Promise<SettleReply> {
  const { workflowType, workflowId, network, payer } = run;
  const handle = await startOrAttach(deps.temporal, workflowType, {
    workflowId,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [run.input],
    searchAttributes: [
      { key: X402Kind, value: 'settle' },
      { key: X402Network, value: network },
      // EVM addresses are searched lower-case; base58 (Solana) is case-sensitive and kept as is.
      { key: X402Payer, value: payer.startsWith('0x') ? payer.toLowerCase() : payer },
      { key: X402State, value: 'verifying' },
      { key: X402Organization, value: run.input.organizationId },
    ],
    memo: { requestId: req.requestId },
    onStart: observeWorkflowStart(deps, workflowType, req.requestId, workflowId),
  });

  try {
    const result = await resultBefore<SettleOutcome>(deps.temporal, handle, Date.now() + deps.config.SETTLE_WAIT_MS);
    if (result.done) return replyFor(result.value.response, result.value.organizationId, req.auth, network);
  } catch (err) {
    const rejected = settlementRejection(err)?.response;
    if (rejected) return { status: settleStatusFor(rejected.errorReason ?? ''), body: rejected };
    throw err;
  }
  return pendingReply(req, workflowId, network, payer);
}

/** 202 `settlement_pending`, with the transaction hash once the workflow has recorded one. */
export async function pendingReply(req: SettleRequest, workflowId: string, network: string, payer: string): Promise<SettleReply> {
  const row = await req.em.fork().findOne(Settlement, { id: workflowId });
  return {
    status: settleStatusFor('settlement_pending'),
    body: { success: false, errorReason: 'settlement_pending', transaction: row?.transaction ?? '', network, payer },
  };
}

/** A payment already settled for another organization is not theirs to claim. */
export function replyFor(response: SettleResponse, ownerOrg: string, auth: AuthContext, network: string): SettleReply {
  if (ownerOrg !== auth.organizationId) return settleFailure('invalid_transaction_state', network, response.payer);
  return { status: response.success ? 200 : settleStatusFor(response.errorReason ?? ''), body: response };
}
