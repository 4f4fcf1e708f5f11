import { WorkflowFailedError } from '@temporalio/client';
import { observeWorkflowStart } from '../observability/workflow-starts';
import { ApplicationFailure } from '@temporalio/common';
import type { EntityManager } from '@mikro-orm/core';
import type { ApiDeps, AuthContext } from '../api/context';
import type { EvmNetwork } from '../chains/networks';
import { Organization, Settlement } from '../db/entities';
import { settleStatusFor, type SettleReason } from '../x402/error-reasons';
import type { SettleResponse } from '../x402/schemas';
import { settleWorkflowId } from '../temporal/workflow-ids';
import { WORKFLOW_TYPES } from '../temporal/task-queues';
import { resultBefore, startOrAttach } from '../temporal/start-or-attach';
import { X402Kind, X402Network, X402Organization, X402Payer, X402State } from '../../temporal/search-attributes';
import { parseExactPayment } from './parse-payment';
import { settleRouteOf, type SettleRoute } from './classify';
import type { SettleInput, SettleOutcome } from './types';
import { settleBatched } from './settle-batched';

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

export type SettleHandler = (deps: ApiDeps, req: SettleRequest) => Promise<SettleReply>;

const FINAL_STATES = new Set(['settled', 'failed']);

export const settleFailure = (reason: SettleReason | string, network = '', payer?: string): SettleReply => ({
  status: settleStatusFor(reason),
  body: { success: false, errorReason: reason, transaction: '', network, ...(payer ? { payer } : {}) },
});

/** POST /v1/settle after authentication, counted in x402_settlements_total (src/observability/metrics.ts). */
export async function settlePayment(deps: ApiDeps, req: SettleRequest): Promise<SettleReply> {
  const started = performance.now();
  // A body whose envelope does not parse has no route; the EIP-3009 handler answers it (invalid_payload).
  const route = settleRouteOf(req.body);
  const { status, body } = await SETTLE_ROUTES[route ?? 'eip3009'](deps, req);
  const outcome = body.success ? 'success' : (body.errorReason ?? 'unknown');
  deps.metrics?.settlement(route ?? 'unknown', body.network, outcome, (performance.now() - started) / 1000);
  return { status, body };
}

/**
 * EIP-3009 (routing step 4): validate, resolve the payout, then start (or attach to) the settlement
 * workflow and wait for it up to SETTLE_WAIT_MS.
 */
async function settleEip3009(deps: ApiDeps, req: SettleRequest): Promise<SettleReply> {
  const parsed = parseExactPayment(deps, req.auth, req.body);
  if (!parsed.ok) return settleFailure(parsed.reason, parsed.network, parsed.payer);
  const { payload, requirements, network, payer } = parsed;

  const org = await req.em.findOne(Organization, { id: req.auth.organizationId });
  const payout = requirements.extra?.creditedRecipient ?? (network.testnet ? org?.payoutWalletTest : org?.payoutWalletLive);
  if (!org || !payout) return settleFailure('payout_wallet_not_configured', network.id, payer);

  const workflowId = settleWorkflowId(network.id, payer, payload.payload.authorization.nonce);
  const known = await req.em.findOne(Settlement, { id: workflowId });
  if (known && FINAL_STATES.has(known.state) && known.response) {
    return reply(JSON.parse(known.response) as SettleResponse, known.organizationId, req.auth, network);
  }

  const { fee, feeRecipient } = platformFee(BigInt(payload.payload.authorization.value), org, deps);
  const input: SettleInput = {
    workflowId,
    requestId: req.requestId,
    organizationId: org.id,
    apiKeyId: req.auth.apiKeyId ?? '',
    route: 'eip3009',
    network: network.id,
    paymentPayload: payload,
    paymentRequirements: requirements,
    payout,
    fee: fee.toString(),
    feeRecipient,
  };
  const handle = await startOrAttach(deps.temporal, WORKFLOW_TYPES.settlement, {
    workflowId,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [input],
    searchAttributes: [
      { key: X402Kind, value: 'settle' },
      { key: X402Network, value: network.id },
      { key: X402Payer, value: payer.toLowerCase() },
      { key: X402State, value: 'verifying' },
      { key: X402Organization, value: org.id },
    ],
    memo: { requestId: req.requestId },
    onStart: observeWorkflowStart(deps, WORKFLOW_TYPES.settlement, req.requestId, workflowId),
  });

  try {
    const result = await resultBefore<SettleOutcome>(deps.temporal, handle, Date.now() + deps.config.SETTLE_WAIT_MS);
    if (result.done) return reply(result.value.response, result.value.organizationId, req.auth, network);
  } catch (err) {
    const rejected = rejectionOf(err);
    if (rejected) return { status: settleStatusFor(rejected.errorReason ?? ''), body: rejected };
    throw err;
  }
  // Still running: answer pending with the transaction hash once one is recorded; a repeat of
  // this request attaches to the same workflow.
  const row = await req.em.fork().findOne(Settlement, { id: workflowId });
  return {
    status: settleStatusFor('settlement_pending'),
    body: { success: false, errorReason: 'settlement_pending', transaction: row?.transaction ?? '', network: network.id, payer },
  };
}

/** An authorization already settled for another organization is not theirs to claim. */
function reply(response: SettleResponse, ownerOrg: string, auth: AuthContext, network: EvmNetwork): SettleReply {
  if (ownerOrg !== auth.organizationId) return settleFailure('invalid_transaction_state', network.id, response.payer);
  return { status: response.success ? 200 : settleStatusFor(response.errorReason ?? ''), body: response };
}

/** A workflow that ended failed with our SettlementRejected failure carries its settle response. */
function rejectionOf(err: unknown): SettleResponse | undefined {
  if (!(err instanceof WorkflowFailedError)) return undefined;
  const cause = err.cause;
  if (cause instanceof ApplicationFailure && cause.type === 'SettlementRejected' && cause.details?.[0]) {
    return cause.details[0] as SettleResponse;
  }
  return undefined;
}

function platformFee(value: bigint, org: Organization, deps: ApiDeps): { fee: bigint; feeRecipient: string } {
  const recipient = deps.config.PLATFORM_FEE_RECIPIENT;
  if (!recipient || !org.platformFeeBps) return { fee: 0n, feeRecipient: '0x0000000000000000000000000000000000000000' };
  return { fee: (value * BigInt(org.platformFeeBps)) / 10_000n, feeRecipient: recipient };
}

/**
 * One handler per route of the spec's routing (src/settle/classify.ts). A route without its own
 * handler yet goes to the EIP-3009 handler, which answers `unsupported_scheme` for it.
 */
const SETTLE_ROUTES: Record<SettleRoute, SettleHandler> = {
  solana: settleEip3009,
  batched: settleBatched,
  permit2: settleEip3009,
  eip3009: settleEip3009,
};
