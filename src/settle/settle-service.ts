import type { ServiceDeps } from '../deps';
import { settleWorkflowId } from '../temporal/workflow-ids';
import { WORKFLOW_TYPES } from '../temporal/task-queues';
import { parseExactPayment } from './parse-payment';
import { settleRouteOf, type SettleRoute } from './classify';
import type { SettleInput } from './types';
import { settlePermit2 } from './settle-permit2';
import { withCrossChainRoute } from '../schemes/eip3009-crosschain/index';
import {
  payoutFor,
  platformFee,
  recordedSettlement,
  runSettlement,
  settleFailure,
  type SettleHandler,
  type SettleReply,
  type SettleRequest,
} from './run';
import { settleSolana } from './settle-solana';
import { settleBatched } from '../schemes/batched/settle';

export { settleFailure, type SettleHandler, type SettleReply, type SettleRequest } from './run';

/** POST /v1/settle after authentication, counted in x402_settlements_total (src/observability/metrics.ts). */
export async function settlePayment(deps: ServiceDeps, req: SettleRequest): Promise<SettleReply> {
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
async function settleEip3009(deps: ServiceDeps, req: SettleRequest): Promise<SettleReply> {
  const parsed = parseExactPayment(deps, req.auth, req.body);
  if (!parsed.ok) return settleFailure(parsed.reason, parsed.network, parsed.payer);
  const { payload, requirements, network, payer } = parsed;

  const resolved = await payoutFor(req, network.testnet, requirements.extra?.creditedRecipient);
  if (!resolved) return settleFailure('payout_wallet_not_configured', network.id, payer);
  const { org, payout } = resolved;

  const workflowId = settleWorkflowId(network.id, payer, payload.payload.authorization.nonce);
  const recorded = await recordedSettlement(req, workflowId, network.id);
  if (recorded) return recorded;

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
  return runSettlement(deps, req, { workflowType: WORKFLOW_TYPES.settlement, workflowId, input, network: network.id, payer });
}

/**
 * One handler per route of the spec's routing (src/settle/classify.ts). A route without its own
 * handler yet goes to the EIP-3009 handler, which answers `unsupported_scheme` for it.
 */
const SETTLE_ROUTES: Record<SettleRoute, SettleHandler> = {
  solana: settleSolana,
  batched: settleBatched,
  permit2: settlePermit2,
  eip3009: withCrossChainRoute(settleEip3009),
};
