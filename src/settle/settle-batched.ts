import type { ApiDeps } from '../api/context';
import { assertKeyModeAllows } from '../api/middleware/auth';
import { forwardToGateway } from '../batched/gateway-client';
import { gatewayNetwork, settleTestnetFlag } from '../batched/gateway-networks';
import { batchedSettleFailure, batchedSettleReply, forwardedBody, type BatchedReply } from '../batched/responses';
import { exactEvmPayloadSchema, paymentRequirementsSchema, type SettleResponse } from '../x402/schemas';
import type { SettleReply, SettleRequest } from './settle-service';

/**
 * Batched nanopayments (settle routing step 2): forward to the upstream batching gateway, which
 * verifies the buyer's signature against its gateway-wallet balance, accepts, and settles in
 * batches. The forward is one bounded, synchronous upstream call in the API process, not a
 * workflow: no money moves here, the upstream deduplicates by (payer, nonce), and the spec's
 * 200/400/500 answer is the upstream's own verdict (docs/decisions.md "Batched payments and
 * withdrawals").
 */
export async function settleBatched(deps: ApiDeps, req: SettleRequest): Promise<SettleReply> {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const rawNetwork = (body.paymentPayload as { network?: unknown } | undefined)?.network;
  const networkName = typeof rawNetwork === 'string' ? rawNetwork : '';
  const payload = exactEvmPayloadSchema.safeParse(body.paymentPayload);
  if (!payload.success) return settleFailure('invalid_payload', networkName);
  const requirements = paymentRequirementsSchema.safeParse(body.paymentRequirements);
  if (!requirements.success) return settleFailure('invalid_payment_requirements', networkName);

  const network = gatewayNetwork(deps.networks, payload.data.network, deps.config.GATEWAY_MAINNET_ENABLED);
  if (!network) return asSettle(batchedSettleFailure('gateway_not_enabled', networkName));
  assertKeyModeAllows(req.auth, network); // 403 envelope, as on every other route

  let upstream: Record<string, unknown>;
  try {
    upstream = await forwardToGateway(deps.config, network, 'settle', forwardedBody(payload.data, requirements.data, network.usdc));
  } catch (err) {
    deps.logger.warn({ requestId: req.requestId, network: network.id, err: (err as Error).message }, 'batched settle: forwarding failed');
    return asSettle(batchedSettleFailure('batched_settle_error', network.id));
  }
  return asSettle(batchedSettleReply(upstream, network.id, settleTestnetFlag(network), req.auth, new Date()));
}

/** Request errors in the settle shape (not imported from settle-service, which imports this file). */
const settleFailure = (reason: 'invalid_payload' | 'invalid_payment_requirements', network: string): SettleReply => ({
  status: 400,
  body: { success: false, errorReason: reason, transaction: '', network },
});

const asSettle = (r: BatchedReply): SettleReply => ({ status: r.status, body: r.body as unknown as SettleResponse });
