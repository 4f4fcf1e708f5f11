import { isSolanaNetworkId } from '../chains/networks';
import {
  paymentPayloadEnvelopeSchema,
  paymentRequirementsSchema,
  permit2PayloadBodySchema,
  type PaymentRequirements,
} from '../x402/schemas';

export type SettleRoute = 'solana' | 'batched' | 'permit2' | 'eip3009';

/**
 * Picks the settlement route in the spec's order ("POST /v1/settle", routing steps 1-4):
 * Solana network, then the batched gateway marker, then a payload that parses as Permit2 (the
 * full schema, as the spec words it), else EIP-3009. A payload that looks like two kinds takes the
 * earlier step; a malformed Permit2 payload falls through to EIP-3009 and fails its parse there.
 */
export function classifySettleRoute(
  payload: { network: string; payload: Record<string, unknown> },
  requirements: Pick<PaymentRequirements, 'extra'>,
): SettleRoute {
  if (isSolanaNetworkId(payload.network)) return 'solana';
  if (requirements.extra?.name === 'GatewayWalletBatched' && requirements.extra?.version === '1') return 'batched';
  if (permit2PayloadBodySchema.safeParse(payload.payload).success) return 'permit2';
  return 'eip3009';
}

/** The route of a raw settle/verify body, or undefined when its payload envelope or requirements do not parse. */
export function settleRouteOf(body: unknown): SettleRoute | undefined {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const envelope = paymentPayloadEnvelopeSchema.safeParse(b.paymentPayload);
  // Step 1 looks at the payload's network only; Solana requirements (base58 payTo/asset) are parsed by that route.
  if (envelope.success && isSolanaNetworkId(envelope.data.network)) return 'solana';
  const requirements = paymentRequirementsSchema.safeParse(b.paymentRequirements);
  if (!envelope.success || !requirements.success) return undefined;
  return classifySettleRoute(envelope.data, requirements.data);
}
