import { isEvmNetworkId, type NetworkTable } from '../chains/networks';
import type { AuthContext } from '../auth/key-mode';
import type { ServiceDeps } from '../deps';
import { belowMinimum } from './minimum';
import { settleFailure, skeletonRoute, verifyRefusal } from './run';
import { paymentPayloadEnvelopeSchema, paymentRequirementsSchema } from '../x402/schemas';
import { batchedRoute } from './batched';
import { eip3009 } from '../schemes/eip3009';
import { eip3009CrossChain } from './crosschain';
import { permit2 } from '../schemes/permit2';
import type { RoutingView, SettleReply, SettleRequest, SettleRoute, VerifyReply } from '../schemes/scheme';
import { solana } from '../schemes/solana';

/**
 * Every settlement scheme, in the spec's routing order ("POST /v1/settle", steps 1-4): Solana
 * network, the batched gateway marker, a payload that parses as Permit2, then EIP-3009 (bridged when
 * the destination chain differs). A payment that looks like two kinds takes the earlier step.
 * Adding a scheme: one folder under src/schemes/ and one line here (docs/architecture.md "Adding a scheme").
 */
export const SETTLE_ROUTES: readonly SettleRoute[] = [
  skeletonRoute(solana),
  batchedRoute,
  skeletonRoute(permit2),
  eip3009CrossChain,
  skeletonRoute(eip3009),
];

/** Answers a body no route claims: its checks say what is wrong (`invalid_payload`, `invalid_payment_requirements`). */
const FALLBACK = SETTLE_ROUTES[SETTLE_ROUTES.length - 1];

/** The route of a raw settle/verify body; undefined when its payload envelope or (EVM) requirements do not parse. */
export function routeOf(networks: NetworkTable, body: unknown): SettleRoute | undefined {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const envelope = paymentPayloadEnvelopeSchema.safeParse(b.paymentPayload);
  if (!envelope.success) return undefined;
  const view: RoutingView = { network: envelope.data.network, payload: envelope.data.payload };
  // Step 1 looks at the payload's network only; Solana requirements (base58 payTo/asset) are parsed by that route.
  if (solana.claims(view)) return SETTLE_ROUTES[0];
  const requirements = paymentRequirementsSchema.safeParse(b.paymentRequirements);
  if (!requirements.success) return undefined;
  view.extra = requirements.data.extra as Record<string, unknown> | undefined;
  view.chainId = isEvmNetworkId(view.network) ? networks.get(view.network)?.chainId : undefined;
  return SETTLE_ROUTES.find((r) => r.claims(view)) ?? FALLBACK;
}

/** POST /v1/settle after authentication: the scheme's route answers; counted in x402_settlements_total. */
export async function answerSettle(deps: ServiceDeps, req: SettleRequest): Promise<SettleReply> {
  const started = performance.now();
  const route = routeOf(deps.networks, req.body);
  const { status, body } =
    route && belowMinimum(deps, req.auth, req.body, route.route) ? tooLow(req.body) : await (route ?? FALLBACK).settle(deps, req);
  const outcome = body.success ? 'success' : (body.errorReason ?? 'unknown');
  deps.metrics?.settlement(route?.route ?? 'unknown', body.network, outcome, (performance.now() - started) / 1000);
  return { status, body };
}

const tooLow = (body: unknown) => settleFailure('amount_too_low', (body as { paymentPayload: { network: string } }).paymentPayload.network);

/**
 * The spec's verify is legacy: EIP-3009 and batched only ("It does not validate Permit2 payloads").
 * x402 v2 sellers verify every payment before serving it, so a v2 request is verified whatever its
 * scheme (docs/decisions/x402-v2-at-the-edge.md).
 */
const V1_VERIFIED_ROUTES = new Set(['batched', 'eip3009', 'eip3009-crosschain']);

/**
 * POST /v1/verify (deprecated): the same request checks and verification rules as settle, without
 * any transaction. Request errors answer `{errorReason}` with 400; a payment that fails a rule is a
 * 200 verify response with `isValid: false`, as x402 verifiers answer.
 */
export async function answerVerify(deps: ServiceDeps, auth: AuthContext, body: unknown, opts = { v2: false }): Promise<VerifyReply> {
  const route = routeOf(deps.networks, body) ?? FALLBACK;
  if (!opts.v2 && !V1_VERIFIED_ROUTES.has(route.route)) return verifyRefusal(auth, 'unsupported_scheme');
  if (belowMinimum(deps, auth, body, route.route)) return verifyRefusal(auth, 'amount_too_low');
  return route.verify(deps, auth, body);
}
