import { parseSignature, type Hex } from 'viem';
import { z } from 'zod';
import { addressSchema, hexSchema, uintStringSchema } from '../../x402/schemas';

/**
 * The Permit2 payload as the x402 v2 SDK (`@x402/evm`, `assetTransferMethod: "permit2"` and `upto`)
 * signs it: `{signature, permit2Authorization: {from, permitted, spender, nonce, deadline, witness}}`,
 * with an optional EIP-2612 permit for Permit2 in the payment's `extensions.eip2612GasSponsoring`.
 * Our spec's shape is `{signature, owner, permit, witness, permit2612?}` for the same signed message
 * (docs/decisions/x402-v2-schemes.md "Permit2 in both shapes"); this maps the SDK's onto ours at the edge, so
 * everything behind (verification, business key, settlement) is one path.
 */
const sdkPermit2PayloadSchema = z.object({
  signature: hexSchema.max(2 + 2 * 1024),
  permit2Authorization: z.object({
    from: addressSchema,
    permitted: z.object({ token: addressSchema, amount: uintStringSchema }),
    spender: addressSchema,
    nonce: uintStringSchema,
    deadline: uintStringSchema,
    witness: z.object({ to: addressSchema, validAfter: uintStringSchema, facilitator: addressSchema.optional() }),
  }),
});

/** `extensions.eip2612GasSponsoring.info` of a v2 payment payload (the SDK's signed EIP-2612 permit). */
const eip2612InfoSchema = z.object({
  from: addressSchema,
  asset: addressSchema,
  spender: addressSchema,
  amount: uintStringSchema,
  nonce: uintStringSchema,
  deadline: uintStringSchema,
  signature: hexSchema.max(2 + 2 * 1024),
});

export const EIP2612_GAS_SPONSORING = 'eip2612GasSponsoring';

/** The SDK's signed EIP-2612 permit as our `permit2612` (undefined when absent or not a 65-byte signature). */
function permit2612Of(extensions: Record<string, unknown> | null | undefined) {
  const ext = extensions?.[EIP2612_GAS_SPONSORING] as { info?: unknown } | undefined;
  const info = eip2612InfoSchema.safeParse(ext?.info);
  if (!info.success) return undefined;
  try {
    const sig = parseSignature(info.data.signature as Hex);
    const v = sig.v !== undefined ? Number(sig.v) : 27 + (sig.yParity ?? 0);
    return { value: info.data.amount, deadline: info.data.deadline, r: sig.r, s: sig.s, v };
  } catch {
    return undefined;
  }
}

/**
 * Our spec's Permit2 payload for an SDK-shaped one, or the payload unchanged when it is not in the
 * SDK's shape. The SDK's `spender` is not carried over: the scheme's proxy is the spender our
 * verification signs against, so an SDK payload signed for another spender fails the signature check.
 */
export function permit2PayloadOfSdk(
  payload: Record<string, unknown>,
  extensions?: Record<string, unknown> | null,
): Record<string, unknown> {
  const sdk = sdkPermit2PayloadSchema.safeParse(payload);
  if (!sdk.success) return payload;
  const a = sdk.data.permit2Authorization;
  const permit2612 = permit2612Of(extensions);
  return {
    signature: sdk.data.signature,
    owner: a.from,
    permit: { permitted: a.permitted, nonce: a.nonce, deadline: a.deadline },
    witness: a.witness,
    ...(permit2612 ? { permit2612 } : {}),
  };
}
