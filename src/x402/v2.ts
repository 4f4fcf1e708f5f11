import { z } from 'zod';
import { uintStringSchema } from './schemas';

/**
 * x402 v2 wire formats, as `@x402/core` 2.x sends them to a facilitator (`HTTPFacilitatorClient`):
 * CAIP-2 networks, `amount` instead of `maxAmountRequired`, the accepted requirements inside the
 * payment payload, and the resource beside them. The service translates them to v1 at the edge
 * (src/settle/v2.ts); everything behind is the same for both versions.
 */

export const requirementsV2Schema = z.object({
  scheme: z.enum(['exact', 'upto']),
  network: z.string().min(1).max(128),
  asset: z.string().min(1).max(128),
  amount: uintStringSchema,
  payTo: z.string().min(1).max(128),
  maxTimeoutSeconds: z.number().int().positive().max(31_536_000),
  extra: z.record(z.string(), z.unknown()).nullish(),
});
export type RequirementsV2 = z.infer<typeof requirementsV2Schema>;

export const resourceV2Schema = z
  .object({ url: z.string().max(2048), description: z.string().max(2048).optional(), mimeType: z.string().max(256).optional() })
  .loose();

export const paymentPayloadV2Schema = z.object({
  x402Version: z.literal(2),
  resource: resourceV2Schema.optional(),
  accepted: requirementsV2Schema,
  payload: z.record(z.string(), z.unknown()),
  extensions: z.record(z.string(), z.unknown()).nullish(),
});

/** POST /v1/verify and /v1/settle bodies of v2 clients. */
export const requestV2Schema = z.object({
  x402Version: z.literal(2).optional(),
  paymentPayload: paymentPayloadV2Schema,
  paymentRequirements: requirementsV2Schema,
});
export type RequestV2 = z.infer<typeof requestV2Schema>;

/** A body speaks v2 when it says so, at the top or in its payload. */
export function isV2Body(body: unknown): boolean {
  const b = body as { x402Version?: unknown; paymentPayload?: { x402Version?: unknown } } | null;
  return b?.x402Version === 2 || b?.paymentPayload?.x402Version === 2;
}
