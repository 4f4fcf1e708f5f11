/**
 * Pure mapping of upstream gateway answers to our batched settle and verify responses (spec
 * "Settle response", "Verify response", "Batched settle responses"). Unit-tested.
 */

export interface BatchedReply {
  status: number;
  body: Record<string, unknown>;
}

export interface BatchedAuth {
  organizationId: string;
}

/**
 * Settle: the upstream fields plus `settlementMethod`, `network` (our network id) and `testnet`;
 * 200 with `authContext` (authMethod `middleware_handled`) when the upstream says `success: true`,
 * otherwise 400 without any `authContext`.
 */
export function batchedSettleReply(
  upstream: Record<string, unknown>,
  network: string,
  testnet: boolean,
  auth: BatchedAuth,
  now: Date,
): BatchedReply {
  const { authContext: _ignored, ...forwarded } = upstream;
  const body = { ...forwarded, settlementMethod: 'batched', network, testnet };
  if (upstream.success !== true) return { status: 400, body };
  return {
    status: 200,
    body: { ...body, authContext: { organizationId: auth.organizationId, authMethod: 'middleware_handled', timestamp: now.toISOString() } },
  };
}

/** Settle failures of our own: 403 `gateway_not_enabled`, 500 `batched_settle_error`. */
export function batchedSettleFailure(reason: 'gateway_not_enabled' | 'batched_settle_error', network: string): BatchedReply {
  return {
    status: reason === 'gateway_not_enabled' ? 403 : 500,
    body: { success: false, errorReason: reason, transaction: '', network },
  };
}

/** Verify: the upstream fields plus `verificationMethod` and `testnet`, always 200. */
export function batchedVerifyReply(upstream: Record<string, unknown>, testnet: boolean): BatchedReply {
  return { status: 200, body: { ...upstream, verificationMethod: 'batched', testnet } };
}

/** Verify failures of our own, in the verify error shape `{errorReason}`. */
export function batchedVerifyFailure(reason: 'gateway_not_enabled' | 'batched_verify_error'): BatchedReply {
  return { status: reason === 'gateway_not_enabled' ? 403 : 500, body: { errorReason: reason } };
}

/**
 * What is forwarded upstream: the request as the client sent it, with the network named by its CAIP-2
 * id in both objects (the upstream gateway knows no v1 names; spec "Network identifiers") and `asset`
 * swapped for the network's USDC. A network without a chain id (`tempo`) keeps its name: the
 * upstream refuses it, as the spec says it does.
 */
export function forwardedBody(
  paymentPayload: Record<string, unknown>,
  paymentRequirements: Record<string, unknown>,
  network: { caip2: string | undefined; usdc: string | undefined },
): { paymentPayload: Record<string, unknown>; paymentRequirements: Record<string, unknown> } {
  const named = network.caip2 ? { network: network.caip2 } : {};
  return {
    paymentPayload: { ...paymentPayload, ...named },
    paymentRequirements: { ...paymentRequirements, ...named, ...(network.usdc ? { asset: network.usdc } : {}) },
  };
}
