import type { ServiceDeps } from '../deps';
import type { AuthContext } from '../auth/key-mode';
import { tokenReads } from '../schemes/eip3009/reads';
import { verifyExactEvm } from '../schemes/eip3009/verify';
import { parseExactPayment } from './parse-payment';
import { settleRouteOf } from './classify';
import { verifyBatched } from '../schemes/batched/verify';

export interface VerifyReply {
  status: number;
  body: Record<string, unknown>;
}

/**
 * POST /v1/verify (deprecated): the same request checks and verification rules as settle, without
 * any transaction. Request errors answer `{errorReason}` with 400; a payment that fails a rule is a
 * 200 verify response with `isValid: false`, as x402 verifiers answer.
 */
export async function verifyPayment(deps: ServiceDeps, auth: AuthContext, body: unknown): Promise<VerifyReply> {
  if (settleRouteOf(body) === 'batched') return verifyBatched(deps, auth, body);
  const parsed = parseExactPayment(deps, auth, body);
  if (!parsed.ok) {
    if (parsed.reason === 'invalid_payload' || parsed.reason === 'invalid_payment_requirements') {
      return { status: 400, body: { errorReason: parsed.reason } };
    }
    return {
      status: 200,
      body: { isValid: false, invalidReason: parsed.reason, payer: parsed.payer ?? '', authContext: authContext(auth) },
    };
  }
  const v = await verifyExactEvm(parsed.payload, parsed.requirements, parsed.network, {
    nowSeconds: Math.floor(Date.now() / 1000),
    minValiditySeconds: deps.config.MIN_VALIDITY_SECONDS,
    reads: tokenReads(parsed.network),
  });
  const verdict = v.isValid ? { isValid: true } : { isValid: false, invalidReason: v.invalidReason };
  return { status: 200, body: { ...verdict, payer: v.payer, authContext: authContext(auth) } };
}

function authContext(auth: AuthContext) {
  return { organizationId: auth.organizationId, authMethod: 'organization_specific', timestamp: new Date().toISOString() };
}
