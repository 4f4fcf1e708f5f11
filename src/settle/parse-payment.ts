import type { ServiceDeps } from '../deps';
import type { AuthContext } from '../auth/key-mode';
import { assertKeyModeAllows } from '../auth/key-mode';
import { isEvmNetworkId, type EvmNetwork } from '../chains/networks';
import type { SettleReason } from '../x402/error-reasons';
import {
  exactEvmPayloadSchema,
  paymentPayloadEnvelopeSchema,
  paymentRequirementsSchema,
  type ExactEvmPayload,
  type PaymentRequirements,
} from '../x402/schemas';
import { classifySettleRoute } from './classify';

export type ParsedPayment =
  | { ok: true; payload: ExactEvmPayload; requirements: PaymentRequirements; network: EvmNetwork; payer: string }
  | { ok: false; reason: SettleReason; network: string; payer?: string };

/**
 * The request checks that settle and verify share, in order (docs/decisions.md, rules 2-8):
 * both objects parse, the route is EIP-3009, the network is known, allowed for the key's mode
 * (403 ApiError) and enabled. What the chain must confirm is left to `verifyExactEvm`.
 */
export function parseExactPayment(deps: Pick<ServiceDeps, 'networks' | 'config'>, auth: AuthContext, raw: unknown): ParsedPayment {
  const body = (typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;
  const rawNetwork = (body.paymentPayload as { network?: unknown } | undefined)?.network;
  const networkName = typeof rawNetwork === 'string' ? rawNetwork : '';
  const fail = (reason: SettleReason, payer?: string): ParsedPayment => ({ ok: false, reason, network: networkName, payer });

  const envelope = paymentPayloadEnvelopeSchema.safeParse(body.paymentPayload);
  if (!envelope.success) return fail('invalid_payload');
  const requirements = paymentRequirementsSchema.safeParse(body.paymentRequirements);
  if (!requirements.success) return fail('invalid_payment_requirements');
  if (classifySettleRoute(envelope.data, requirements.data) !== 'eip3009') return fail('unsupported_scheme');
  const parsed = exactEvmPayloadSchema.safeParse(body.paymentPayload);
  if (!parsed.success) return fail('invalid_payload');
  const payer = parsed.data.payload.authorization.from;

  const network = isEvmNetworkId(parsed.data.network) ? deps.networks.get(parsed.data.network) : undefined;
  if (!network) return fail('invalid_network', payer);
  assertKeyModeAllows(auth, network); // 403 before anything else is said about the network
  if (!network.enabled || network.permitOnly) return fail('invalid_network', payer);
  if (!network.testnet && !deps.config.MAINNETS_ENABLED) return fail('invalid_network', payer);
  return { ok: true, payload: parsed.data, requirements: requirements.data, network, payer };
}
