import type { ServiceDeps } from '../deps';
import { networkById } from '../chains/mainnet-gate';
import { solanaNetworks } from '../chains/solana/context';
import { permit2PayloadOfSdk } from '../schemes/permit2/sdk-payload';
import { paymentPayloadV2Schema, requestV2Schema, type RequestV2 } from '../x402/v2';
import type { PaymentRequirements, SettleResponse } from '../x402/schemas';
import { v2Reason } from '../x402/v2-reasons';

/**
 * x402 v2 at the edge: a v2 verify/settle request becomes the v1 request it stands for (same
 * payment, same business key, so a v1 and a v2 request for one authorization land on one workflow),
 * and the v1 answer goes back in v2's shape with CAIP-2 networks.
 */

type Deps = Pick<ServiceDeps, 'networks' | 'config'>;

/** CAIP-2 id -> our network id (EVM table, then Solana), or undefined for a network we do not know. */
export function networkOfCaip2(deps: Deps, caip2: string): string | undefined {
  for (const n of deps.networks.values()) if (n.caip2 === caip2) return n.id;
  for (const c of solanaNetworks(deps.config).values()) if (c.network.caip2 === caip2) return c.network.id;
  return undefined;
}

/** Our network id -> its CAIP-2 id (the id itself when it has none). */
export function caip2Of(deps: Deps, id: string): string {
  return networkById(deps, id)?.caip2 ?? id;
}

export type V1Translation =
  { ok: true; body: unknown; network: string } | { ok: false; reason: 'invalid_payload' | 'invalid_payment_requirements' };

/** The v1 body of a v2 request. An unknown CAIP-2 network keeps its id, so the route answers `invalid_network`. */
export function toV1Request(deps: Deps, raw: unknown): V1Translation {
  const parsed = requestV2Schema.safeParse(raw);
  if (!parsed.success) {
    const onRequirements = parsed.error.issues.every((i) => i.path[0] === 'paymentRequirements');
    return { ok: false, reason: onRequirements ? 'invalid_payment_requirements' : 'invalid_payload' };
  }
  const { paymentPayload: p, paymentRequirements: r }: RequestV2 = parsed.data;
  const v1 = (caip2: string) => networkOfCaip2(deps, caip2) ?? caip2;
  const payload = permit2PayloadOfSdk(p.payload, p.extensions);
  // v2 `upto` settles the requirements' `amount` out of the signed maximum; v1 says the same with
  // `maxAmountRequired` = the maximum and `extra.settleAmount` = the usage.
  const uptoMax = r.scheme === 'upto' ? signedMaximum(payload) : undefined;
  return {
    ok: true,
    network: r.network,
    body: {
      x402Version: 1,
      paymentPayload: { x402Version: 1, scheme: p.accepted.scheme, network: v1(p.accepted.network), payload },
      paymentRequirements: {
        scheme: r.scheme,
        network: v1(r.network),
        maxAmountRequired: uptoMax ?? r.amount,
        resource: p.resource?.url ?? '',
        description: p.resource?.description ?? '',
        mimeType: p.resource?.mimeType ?? '',
        payTo: r.payTo,
        maxTimeoutSeconds: r.maxTimeoutSeconds,
        asset: r.asset,
        extra: uptoMax !== undefined ? { ...(r.extra ?? {}), settleAmount: r.amount } : (r.extra ?? undefined),
      },
    },
  };
}

/** A Permit2 payload's signed amount (our spec's shape), if it has one. */
function signedMaximum(payload: Record<string, unknown>): string | undefined {
  const amount = (payload.permit as { permitted?: { amount?: unknown } } | undefined)?.permitted?.amount;
  return typeof amount === 'string' ? amount : undefined;
}

/** A v1 settle response in v2's shape: CAIP-2 network, `payer`, the reason kept. */
export function toV2Settle(deps: Deps, v1: SettleResponse, requestNetwork: string): Record<string, unknown> {
  return {
    success: v1.success,
    ...(v1.errorReason ? { errorReason: v2Reason(v1.errorReason, requestNetwork) } : {}),
    ...(v1.payer ? { payer: v1.payer } : {}),
    transaction: v1.transaction,
    network: v1.network ? caip2Of(deps, v1.network) : requestNetwork,
    ...(v1.amount ? { amount: v1.amount } : {}),
  };
}

/** A v1 verify answer in v2's shape (`isValid`, `invalidReason`, `payer`); request errors keep `{errorReason}`. */
export function toV2Verify(v1: Record<string, unknown>, requestNetwork: string): Record<string, unknown> {
  if (!('isValid' in v1)) return v1;
  return {
    isValid: v1.isValid,
    ...(typeof v1.invalidReason === 'string' && v1.invalidReason ? { invalidReason: v2Reason(v1.invalidReason, requestNetwork) } : {}),
    ...(typeof v1.payer === 'string' && v1.payer ? { payer: v1.payer } : {}),
  };
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64');

/**
 * Our own paid routes (chat, media, top-up) speak v2 too: `PAYMENT-REQUIRED` carries the v2
 * `PaymentRequired` of the v1 challenge (next to the v1 body), a `PAYMENT-SIGNATURE` payment is
 * read as the v1 `X-PAYMENT` it stands for, and `PAYMENT-RESPONSE` answers it.
 */
export function paymentRequiredHeader(deps: Deps, error: string, accepts: PaymentRequirements | PaymentRequirements[]): string {
  const all = Array.isArray(accepts) ? accepts : [accepts];
  const r = all[0];
  return b64({
    x402Version: 2,
    error,
    resource: { url: r.resource, description: r.description, mimeType: r.mimeType },
    accepts: all.map((a) => ({
      scheme: a.scheme,
      network: caip2Of(deps, a.network),
      asset: a.asset,
      amount: a.maxAmountRequired,
      payTo: a.payTo,
      maxTimeoutSeconds: a.maxTimeoutSeconds,
      extra: a.extra ?? {},
    })),
  });
}

/** The v1 `X-PAYMENT` value of a v2 `PAYMENT-SIGNATURE` (undefined when it is not a v2 payment payload). */
function xPaymentOfSignature(deps: Deps, header: string): string | undefined {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(header.trim(), 'base64').toString('utf8'));
  } catch {
    return undefined;
  }
  const parsed = paymentPayloadV2Schema.safeParse(json);
  if (!parsed.success) return undefined;
  const { accepted, payload } = parsed.data;
  return b64({ x402Version: 1, scheme: accepted.scheme, network: networkOfCaip2(deps, accepted.network) ?? accepted.network, payload });
}

/**
 * The payment a paid route received: `X-PAYMENT` (v1), or a `PAYMENT-SIGNATURE` (v2) read as the v1
 * `X-PAYMENT` it stands for (kept as it is when it is not a v2 payload, so the route's own decoding
 * says what is wrong). `header` is '' when neither was sent.
 */
export function paymentOfRequest(deps: Deps, get: (name: string) => string): { header: string; v2: boolean } {
  const v1 = get('X-PAYMENT');
  const signature = get('PAYMENT-SIGNATURE');
  const v2 = !v1 && signature !== '';
  return { v2, header: v2 ? (xPaymentOfSignature(deps, signature) ?? signature) : v1 };
}

/** `PAYMENT-RESPONSE`: the v2 settle response, base64. */
export const paymentResponseV2Header = (deps: Deps, v1: SettleResponse) => b64(toV2Settle(deps, v1, v1.network));
