import { z } from 'zod';
import { paymentPayloadEnvelopeSchema, permit2PayloadBodySchema } from '../../x402/schemas';

/** A whole x402 v1 Permit2 payment payload (spec "PaymentPayload, Permit2"), `exact` or `upto`. */
export const permit2PaymentPayloadSchema = paymentPayloadEnvelopeSchema.extend({
  payload: permit2PayloadBodySchema,
});
export type Permit2PaymentPayload = z.infer<typeof permit2PaymentPayloadSchema>;
