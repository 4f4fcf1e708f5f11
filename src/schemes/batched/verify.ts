import type { ServiceDeps } from '../../deps';
import type { AuthContext } from '../../auth/key-mode';
import { assertKeyModeAllows } from '../../auth/key-mode';
import { forwardToGateway } from './gateway-client';
import { gatewayNetwork, verifyTestnetFlag } from './gateway-networks';
import { batchedVerifyFailure, batchedVerifyReply, forwardedBody } from './responses';
import { exactEvmPayloadSchema, paymentRequirementsSchema } from '../../x402/schemas';
import type { VerifyReply } from '../scheme';

/**
 * The batched branch of POST /v1/verify: the same routing as settle step 2, forwarded to the
 * upstream gateway's verify (403 `gateway_not_enabled`, 500 `batched_verify_error`).
 */
export async function verifyBatched(deps: ServiceDeps, auth: AuthContext, raw: unknown): Promise<VerifyReply> {
  const body = (raw ?? {}) as Record<string, unknown>;
  const payload = exactEvmPayloadSchema.safeParse(body.paymentPayload);
  if (!payload.success) return { status: 400, body: { errorReason: 'invalid_payload' } };
  const requirements = paymentRequirementsSchema.safeParse(body.paymentRequirements);
  if (!requirements.success) return { status: 400, body: { errorReason: 'invalid_payment_requirements' } };

  const network = gatewayNetwork(deps.networks, payload.data.network, deps.config.GATEWAY_MAINNET_ENABLED);
  if (!network) return batchedVerifyFailure('gateway_not_enabled');
  assertKeyModeAllows(auth, network);
  try {
    const upstream = await forwardToGateway(deps.config, network, 'verify', forwardedBody(payload.data, requirements.data, network));
    return batchedVerifyReply(upstream, verifyTestnetFlag(network.id));
  } catch (err) {
    deps.logger.warn({ network: network.id, err: (err as Error).message }, 'batched verify: forwarding failed');
    return batchedVerifyFailure('batched_verify_error');
  }
}
