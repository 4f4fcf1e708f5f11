import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { ServiceDeps } from '../deps';
import { assertKeyModeAllows } from '../auth/key-mode';
import { gatewayNetwork, settleTestnetFlag } from '../schemes/batched/gateway-networks';
import { batchedSettleFailure, batchedSettleReply, forwardedBody, type BatchedReply } from '../schemes/batched/responses';
import { BATCHED_FORWARD_FAILED, BATCHED_REJECTED, type BatchedSettleInput, type BatchedSettleOutcome } from '../schemes/batched/types';
import type { EvmNetwork } from '../chains/networks';
import { Settlement } from '../db/entities';
import { observeWorkflowStart } from '../observability/workflow-starts';
import { resultBefore, startOrAttach } from '../temporal/start-or-attach';
import { batchedSettlementWorkflow } from '../../workflows/batched-settlement';
import { batchedWorkflowId } from '../temporal/workflow-ids';
import { x402SearchAttributes } from '../temporal/search-attributes';
import { exactEvmPayloadSchema, paymentRequirementsSchema, type SettleResponse } from '../x402/schemas';
import type { SettleReply, SettleRequest, SettleRoute } from '../schemes/scheme';
import { claimsBatched } from '../schemes/batched';
import { verifyBatched } from '../schemes/batched/verify';

/**
 * Batched nanopayments (spec routing step 2, requirements marked `GatewayWalletBatched` v1): the
 * upstream batching gateway verifies and moves the money in its batches, so this route forwards
 * (a short workflow for settle) instead of running the settlement skeleton.
 */
export const batchedRoute: SettleRoute = {
  route: 'batched',
  claims: claimsBatched,
  settle: settleBatched,
  verify: verifyBatched,
};

/**
 * Batched nanopayments (settle routing step 2): the upstream batching gateway verifies the buyer's
 * signature against its gateway-wallet balance, accepts, and moves the money in its batches. The
 * forward runs as a short workflow keyed `batched:<network>:<payer>:<nonce>`, so a repeat attaches
 * to the same forward and an accepted payment answers the same result however often it is sent
 * (docs/decisions/batched-payments-and-withdrawals.md).
 */
export async function settleBatched(deps: ServiceDeps, req: SettleRequest): Promise<SettleReply> {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const rawNetwork = (body.paymentPayload as { network?: unknown } | undefined)?.network;
  const networkName = typeof rawNetwork === 'string' ? rawNetwork : '';
  const payload = exactEvmPayloadSchema.safeParse(body.paymentPayload);
  if (!payload.success) return requestFailure('invalid_payload', networkName);
  const requirements = paymentRequirementsSchema.safeParse(body.paymentRequirements);
  if (!requirements.success) return requestFailure('invalid_payment_requirements', networkName);

  const network = gatewayNetwork(deps.networks, payload.data.network, deps.config.GATEWAY_MAINNET_ENABLED);
  if (!network) return asSettle(batchedSettleFailure('gateway_not_enabled', networkName));
  assertKeyModeAllows(req.auth, network); // 403 envelope, as on every other route
  const a = payload.data.payload.authorization;
  const workflowId = batchedWorkflowId(network.id, a.from, a.nonce);
  const testnet = settleTestnetFlag(network);
  const accepted = (upstream: Record<string, unknown>, ownerOrg: string): SettleReply =>
    ownerOrg === req.auth.organizationId
      ? asSettle(batchedSettleReply(upstream, network.id, testnet, req.auth, new Date()))
      : {
          status: 409,
          body: { success: false, errorReason: 'invalid_transaction_state', transaction: '', network: network.id, payer: a.from },
        };

  // The durable record outlives Temporal's retention: an accepted payment is answered from it.
  const known = await req.em.findOne(Settlement, { id: workflowId });
  if (known?.state === 'accepted' && known.response) return accepted(JSON.parse(known.response), known.organizationId);

  const input: BatchedSettleInput = {
    workflowId,
    requestId: req.requestId,
    organizationId: req.auth.organizationId,
    apiKeyId: req.auth.apiKeyId ?? '',
    network: network.id,
    payer: a.from,
    amount: a.value,
    recipient: requirements.data.payTo,
    forwarded: forwardedBody(payload.data, requirements.data, network),
  };
  const handle = await startOrAttach(deps.temporal, batchedSettlementWorkflow, {
    workflowId,
    taskQueue: deps.config.TEMPORAL_TASK_QUEUE,
    args: [input],
    searchAttributes: x402SearchAttributes({
      kind: 'settle',
      network: network.id,
      payer: a.from,
      state: 'forwarding',
      organization: req.auth.organizationId,
    }),
    memo: { requestId: req.requestId },
    onStart: observeWorkflowStart(deps, batchedSettlementWorkflow.name, req.requestId, workflowId),
  });
  try {
    const result = await resultBefore<BatchedSettleOutcome>(deps.temporal, handle, Date.now() + req.waitMs);
    if (result.done) return accepted(result.value.upstream, result.value.organizationId);
  } catch (err) {
    const failure = err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure ? err.cause : undefined;
    if (failure?.type === BATCHED_REJECTED && failure.details?.[0]) {
      return asSettle(batchedSettleReply(failure.details[0] as Record<string, unknown>, network.id, testnet, req.auth, new Date()));
    }
    if (failure?.type === BATCHED_FORWARD_FAILED) {
      deps.logger.warn({ requestId: req.requestId, workflowId, err: failure.message }, 'batched settle: forwarding failed');
      return asSettle(batchedSettleFailure('batched_settle_error', network.id));
    }
    throw err;
  }
  return pending(network, a.from, testnet);
}

/** Still forwarding past SETTLE_WAIT_MS (e.g. no worker): repeat the request to attach. */
function pending(network: EvmNetwork, payer: string, testnet: boolean): SettleReply {
  return {
    status: 202,
    body: {
      success: false,
      errorReason: 'settlement_pending',
      transaction: '',
      network: network.id,
      payer,
      settlementMethod: 'batched',
      testnet,
    } as SettleResponse,
  };
}

/** Request errors in the settle shape: 400, the body run.ts's settleFailure gives them. */
const requestFailure = (reason: 'invalid_payload' | 'invalid_payment_requirements', network: string): SettleReply => ({
  status: 400,
  body: { success: false, errorReason: reason, transaction: '', network },
});

const asSettle = (r: BatchedReply): SettleReply => ({ status: r.status, body: r.body as unknown as SettleResponse });
