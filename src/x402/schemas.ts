import { z } from 'zod';

/**
 * Wire formats of x402 v1 as the spec describes them. Every request body is parsed with these
 * before anything else looks at it.
 */

export const addressSchema = z.string().regex(/^0x[a-fA-F0-9]{40}$/, 'must be a 0x-prefixed 20-byte hex address');
/** Unsigned integer as a decimal string, at most 78 digits (fits uint256). */
export const uintStringSchema = z.string().regex(/^(0|[1-9][0-9]{0,77})$/, 'must be a decimal integer string');
export const bytes32Schema = z.string().regex(/^0x[a-fA-F0-9]{64}$/, 'must be 32-byte hex');
export const hexSchema = z.string().regex(/^0x([a-fA-F0-9]{2})+$/, 'must be 0x-prefixed hex');

export const requirementsExtraSchema = z
  .object({
    name: z.string().max(100).optional(),
    version: z.string().max(50).optional(),
    creditedRecipient: addressSchema.optional(),
    destinationChainId: z.number().int().positive().optional(),
    settleAmount: uintStringSchema.optional(),
    platform: z.unknown().optional(),
    platformFeeBps: z.unknown().optional(),
    verifyingContract: addressSchema.optional(),
  })
  .loose();

export const paymentRequirementsSchema = z.object({
  scheme: z.enum(['exact', 'upto']),
  network: z.string().min(1).max(64),
  maxAmountRequired: uintStringSchema,
  resource: z.string().max(2048),
  description: z.string().max(2048),
  mimeType: z.string().max(256),
  payTo: addressSchema,
  maxTimeoutSeconds: z.number().int().positive().max(31_536_000),
  asset: addressSchema,
  extra: requirementsExtraSchema.nullish(),
  outputSchema: z.unknown().optional(),
});
export type PaymentRequirements = z.infer<typeof paymentRequirementsSchema>;

export const eip3009AuthorizationSchema = z.object({
  from: addressSchema,
  to: addressSchema,
  value: uintStringSchema,
  validAfter: uintStringSchema,
  validBefore: uintStringSchema,
  nonce: bytes32Schema,
});
export type Eip3009Authorization = z.infer<typeof eip3009AuthorizationSchema>;

/** Any v1 payment payload: the route classifier decides what `payload` must be. */
export const paymentPayloadEnvelopeSchema = z.object({
  x402Version: z.literal(1),
  scheme: z.enum(['exact', 'upto']),
  network: z.string().min(1).max(64),
  payload: z.record(z.string(), z.unknown()),
});

export const exactEvmPayloadSchema = paymentPayloadEnvelopeSchema.extend({
  scheme: z.literal('exact'),
  payload: z.object({
    signature: hexSchema.max(2 + 2 * 1024),
    authorization: eip3009AuthorizationSchema,
  }),
});
export type ExactEvmPayload = z.infer<typeof exactEvmPayloadSchema>;

/** The `payload` of a Permit2 payment (spec "PaymentPayload, Permit2"); `facilitator` is upto only. */
export const permit2PayloadBodySchema = z.object({
  signature: hexSchema.max(2 + 2 * 1024),
  owner: addressSchema,
  permit: z.object({
    permitted: z.object({ token: addressSchema, amount: uintStringSchema }),
    nonce: uintStringSchema,
    deadline: uintStringSchema,
  }),
  witness: z.object({
    to: addressSchema,
    validAfter: uintStringSchema,
    facilitator: addressSchema.optional(),
  }),
  permit2612: z
    .object({
      value: uintStringSchema,
      deadline: uintStringSchema,
      r: bytes32Schema,
      s: bytes32Schema,
      v: z.number().int().min(0).max(255),
    })
    .optional(),
});
export type Permit2PayloadBody = z.infer<typeof permit2PayloadBodySchema>;

export const settleRequestSchema = z.object({
  paymentPayload: z.unknown(),
  paymentRequirements: z.unknown(),
});

/** Settle response (spec "Settle response"). `transaction` is '' on failure. */
export interface SettleResponse {
  success: boolean;
  transaction: string;
  network: string;
  payer?: string;
  errorReason?: string;
  /** Which value a refused request got wrong (x402's SettleResponse field), when the reason alone does not say. */
  errorMessage?: string;
  authContext?: Record<string, unknown>;
  /** Permit2 `upto` only: the amount settled (base units, decimal), on success. */
  amount?: string;
}
