import type { EvmNetwork } from '../chains/networks';
import type { PaymentRequirements } from '../x402/schemas';
import type { InferenceConfig } from './config';

/**
 * The payment requirements of one chat request: x402 v1 `exact` on the configured chat network,
 * paid to the network's facilitator contract (the service pays itself out to the revenue wallet when
 * it settles), in USDC, for the configured price. Legacy v1 clients (x402-fetch) accept them as is.
 */
export function chatRequirements(c: InferenceConfig, network: EvmNetwork, resource: string, model: string): PaymentRequirements {
  return {
    scheme: 'exact',
    network: network.id,
    maxAmountRequired: c.price,
    resource,
    description: `Chat completion (${model}), streamed as server-sent events`,
    mimeType: 'text/event-stream',
    payTo: network.facilitator!,
    maxTimeoutSeconds: c.paymentTimeoutSeconds,
    asset: network.usdc!,
    extra: { name: c.usdcName, version: c.usdcVersion },
  };
}

/** The 402 body: `{x402Version: 1, error, accepts}` (spec, POST /v1/inference/chat). */
export const challengeBody = (error: string, requirements: PaymentRequirements) => ({
  x402Version: 1 as const,
  error,
  accepts: [requirements],
});

/** `X-PAYMENT-RESPONSE`: base64 of the settle response JSON, as x402 resource servers send it. */
export const paymentResponseHeader = (response: object) => Buffer.from(JSON.stringify(response)).toString('base64');
