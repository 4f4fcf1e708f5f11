import type { ResponseConfig, RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z, type ZodType } from 'zod';
import { paymentRequirementsSchema } from '../x402/schemas';

/**
 * OpenAPI operations of paid inference (src/api/routes/inference.ts), registered into the document
 * by src/api/openapi.ts with its own helpers.
 */
export function registerInferenceOpenApi(t: {
  component<T extends ZodType>(refId: string, schema: T): T;
  route(config: RouteConfig): void;
  json(schema: ZodType, description: string, headers?: Record<string, object>): ResponseConfig;
}): void {
  const ChatError = t.component(
    'ChatError',
    z
      .object({ error: z.string(), supported: z.array(z.string()).optional() })
      .describe('Chat error: `supported` lists the accepted values when one was wrong'),
  );
  const ChatChallenge = t.component(
    'ChatChallenge',
    z.object({ x402Version: z.literal(1), error: z.string(), accepts: z.array(paymentRequirementsSchema) }),
  );
  const ProviderFailed = t.component(
    'ChatProviderFailed',
    z.object({ error: z.literal('provider_failed'), message: z.string(), chargeId: z.string(), refund: z.literal('pending') }),
  );
  const Provider = t.component(
    'InferenceProvider',
    z.object({
      id: z.string(),
      label: z.string(),
      payment: z.enum(['none', 'x402']),
      status: z.enum(['available', 'funding_only']).describe('funding_only: chat is down, a balance can still be topped up'),
      capabilities: z.object({ chat: z.boolean(), models: z.boolean(), balance: z.boolean(), topup: z.boolean() }),
      settlement: z.object({ network: z.string().describe('CAIP-2'), asset: z.string(), decimals: z.number().int() }).optional(),
      topup: z.object({ gatewayUrl: z.string(), merchant: z.string(), settlementChainId: z.number().int() }).optional(),
    }),
  );
  const message = z.object({ role: z.enum(['user', 'assistant']), content: z.string() });
  const ChatRequest = t.component(
    'ChatRequest',
    z.object({
      messages: z.array(message).min(1),
      model: z.string().optional().describe('A model id from GET /v1/inference/models; default the configured default model'),
      template: z.string().optional().describe('A template name from GET /v1/inference/templates; default `logical`'),
    }),
  );
  const paymentResponse = { description: 'base64 JSON settle response of the payment', schema: { type: 'string' as const } };

  t.route({
    method: 'get',
    path: '/v1/inference/providers',
    tags: ['Inference'],
    operationId: 'inferenceProviders',
    summary: 'Configured inference providers with live status (a provider that is down is `unavailable`)',
    responses: { 200: t.json(z.object({ data: z.array(Provider) }), 'Providers') },
  });
  t.route({
    method: 'get',
    path: '/v1/inference/models',
    tags: ['Inference'],
    operationId: 'inferenceModels',
    summary: 'Model ids accepted by chat, live from the providers that are up',
    responses: {
      200: t.json(
        z.object({ data: z.array(z.object({ id: z.string(), provider: z.string(), default: z.boolean() })), default: z.string() }),
        'Models',
      ),
    },
  });
  t.route({
    method: 'get',
    path: '/v1/inference/templates',
    tags: ['Inference'],
    operationId: 'inferenceTemplates',
    summary: 'Chat templates from their source (cached 5 minutes)',
    responses: {
      200: t.json(z.object({ data: z.array(z.object({ name: z.string(), label: z.string() })) }), 'Templates'),
      503: t.json(ChatError, 'The templates source is unavailable and nothing is cached'),
    },
  });
  t.route({
    method: 'post',
    path: '/v1/inference/chat',
    tags: ['Inference'],
    operationId: 'inferenceChat',
    summary: 'x402-paid chat completion streamed as server-sent events',
    description:
      'Without X-PAYMENT: 402 with the payment requirements. With it: the payment is settled (once per authorization), then the ' +
      "provider's reply streams as `data: <chunk JSON>` events ending with `data: [DONE]`; X-PAYMENT-RESPONSE carries the settle response. " +
      'A provider failure after payment is refunded in full (502 before the reply, or an `event: error` instead of [DONE]).',
    parameters: [
      {
        name: 'X-PAYMENT',
        in: 'header',
        required: false,
        description: 'base64 of the JSON x402 v1 payment payload',
        schema: { type: 'string' },
      },
    ],
    request: { body: { required: true, content: { 'application/json': { schema: ChatRequest } } } },
    responses: {
      200: {
        description: 'The reply, as server-sent events',
        headers: { 'X-PAYMENT-RESPONSE': paymentResponse },
        content: { 'text/event-stream': { schema: z.string() } },
      },
      400: t.json(ChatError, 'Empty or malformed messages, unknown model or template'),
      402: t.json(ChatChallenge, 'Payment required, or the payment was refused or already used'),
      413: t.json(ChatError, 'Body too large'),
      415: t.json(ChatError, 'Content-Type is not application/json'),
      502: t.json(ProviderFailed, 'Paid, but the provider failed before the reply started: refunded in full', {
        'X-PAYMENT-RESPONSE': paymentResponse,
      }),
      503: t.json(
        ChatError,
        'Provider or templates source unavailable, or the settlement is still pending (the chat was not served; refunded if it settles)',
      ),
    },
  });
}
