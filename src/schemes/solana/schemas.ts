import { z } from 'zod';
import { paymentRequirementsSchema, uintStringSchema } from '../../x402/schemas';

/** A base58 Solana address (32 bytes: 32 to 44 characters). */
export const solanaAddressSchema = z.string().regex(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/, 'must be a base58 Solana address');

/**
 * Payment requirements of a Solana payment: `payTo` is the seller's wallet (the owner of the
 * receiving token account), `asset` the SPL mint, `extra.feePayer` our fee payer as x402 advertises it.
 */
export const solanaPaymentRequirementsSchema = paymentRequirementsSchema.extend({
  payTo: solanaAddressSchema,
  asset: solanaAddressSchema,
  maxAmountRequired: uintStringSchema.refine((v) => v !== '0' && BigInt(v) < 2n ** 64n, 'must fit an SPL amount (u64, > 0)'),
  extra: z.object({ feePayer: solanaAddressSchema.optional(), destinationChainId: z.unknown().optional() }).loose().nullish(),
});
export type SolanaPaymentRequirements = z.infer<typeof solanaPaymentRequirementsSchema>;

/** `paymentPayload.payload` of a Solana payment (spec "PaymentPayload, Solana"). */
export const exactSvmPayloadBodySchema = z.object({ transaction: z.string().min(1).max(4096) });
