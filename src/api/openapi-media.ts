import type { ResponseConfig, RouteConfig } from '@asteasolutions/zod-to-openapi';
import { z, type ZodType } from 'zod';
import { BUYER_HEADERS } from '../media/buyer-auth-message';
import { MEDIA_JOB_STATES } from '../media/types';
import { BODY_SCHEMAS } from '../media/requests';
import { paymentRequirementsSchema } from '../x402/schemas';

/**
 * OpenAPI operations of media generation (src/api/routes/media.ts), registered into the document by
 * src/api/openapi.ts with its own helpers. Error bodies are `{error: <code>, message}` (docs/decisions/media-generation.md).
 */
export function registerMediaOpenApi(t: {
  component<T extends ZodType>(refId: string, schema: T): T;
  route(config: RouteConfig): void;
  json(schema: ZodType, description: string, headers?: Record<string, object>): ResponseConfig;
}): void {
  const MediaError = t.component(
    'MediaError',
    z
      .object({ error: z.string(), message: z.string() })
      .catchall(z.unknown())
      .describe('Media error: `error` is a stable code (docs/decisions/media-generation.md), `message` says what to fix'),
  );
  const Challenge = t.component(
    'MediaChallenge',
    z.object({ x402Version: z.literal(1), error: z.string(), accepts: z.array(paymentRequirementsSchema) }),
  );
  const Asset = t.component(
    'MediaAsset',
    z.object({
      id: z.string(),
      kind: z.enum(['image', 'video', 'music']),
      model: z.string(),
      prompt: z.string(),
      contentType: z.string(),
      costUsdc: z.string(),
      createdAt: z.string(),
      url: z.string().describe('Durable object URL under {media_url}; a public capability URL'),
      jobId: z.string(),
      size: z.number().int(),
    }),
  );
  const Accepted = t.component(
    'MediaJobAccepted',
    z.object({ jobId: z.string(), kind: z.string(), state: z.enum(MEDIA_JOB_STATES), statusUrl: z.string() }),
  );
  const Job = t.component(
    'MediaJob',
    z.object({
      jobId: z.string(),
      kind: z.string(),
      model: z.string(),
      prompt: z.string(),
      state: z.enum(MEDIA_JOB_STATES),
      progress: z.number().int(),
      costUsdc: z.string(),
      createdAt: z.string(),
      updatedAt: z.string(),
      error: z.string().optional(),
      payment: z.object({ network: z.string(), state: z.string(), settlementTx: z.string().nullable(), refundTx: z.string().nullable() }),
      assets: z.array(Asset),
    }),
  );
  const paid = [
    {
      name: 'Idempotency-Key',
      in: 'header' as const,
      required: true,
      description: '1-64 chars of [A-Za-z0-9._:-]; the same key returns the same result and is charged once',
      schema: { type: 'string' as const },
    },
    {
      name: 'X-PAYMENT',
      in: 'header' as const,
      required: false,
      description: 'base64 of the JSON x402 v1 payment payload',
      schema: { type: 'string' as const },
    },
  ];
  const signed = Object.values(BUYER_HEADERS).map((name) => ({
    name,
    in: 'header' as const,
    required: true,
    description: 'Buyer signature header (docs/decisions/media-generation.md)',
    schema: { type: 'string' as const },
  }));
  const idParam = { name: 'id', in: 'path' as const, required: true, schema: { type: 'string' as const } };
  const authErrors = { 401: t.json(MediaError, 'Missing, expired, replayed or invalid buyer signature') };
  const paymentResponse = { description: 'base64 JSON settle response of the payment', schema: { type: 'string' as const } };
  const postErrors = {
    400: t.json(MediaError, 'invalid_request, idempotency_key_required, invalid_idempotency_key'),
    402: t.json(Challenge, 'Payment required, or the payment was refused'),
    409: t.json(MediaError, 'idempotency_key_reused: the key was used for a different request'),
    413: t.json(MediaError, 'Body too large'),
    415: t.json(MediaError, 'Content-Type is not application/json'),
    503: t.json(MediaError, 'capability_unavailable (the kind is switched off) or payments_unavailable'),
  };

  for (const [route, label] of [
    ['images', 'Generate images (synchronous x402)'],
    ['edits', 'Edit an image (synchronous x402)'],
  ] as const) {
    t.route({
      method: 'post',
      path: route === 'edits' ? '/v1/inference/media/images/edits' : '/v1/inference/media/images',
      tags: ['Media'],
      operationId: route === 'edits' ? 'mediaImageEdits' : 'mediaImages',
      summary: label,
      parameters: paid,
      request: { body: { required: true, content: { 'application/json': { schema: BODY_SCHEMAS[route] } } } },
      responses: {
        200: t.json(z.object({ jobId: z.string(), assets: z.array(Asset) }), 'The stored images', {
          'X-PAYMENT-RESPONSE': paymentResponse,
        }),
        202: t.json(Accepted, 'Still generating past the wait: poll the job'),
        502: t.json(MediaError, 'generation_failed: paid, the provider failed; refunded in full'),
        ...postErrors,
      },
    });
  }
  for (const route of ['video', 'music'] as const) {
    t.route({
      method: 'post',
      path: `/v1/inference/media/${route}`,
      tags: ['Media'],
      operationId: route === 'video' ? 'mediaVideo' : 'mediaMusic',
      summary: `Start a ${route} job (fixed-price x402)`,
      parameters: paid,
      request: { body: { required: true, content: { 'application/json': { schema: BODY_SCHEMAS[route] } } } },
      responses: { 202: t.json(Accepted, 'Paid; the job runs on', { 'X-PAYMENT-RESPONSE': paymentResponse }), ...postErrors },
    });
  }
  t.route({
    method: 'get',
    path: '/v1/inference/media/jobs/{id}',
    tags: ['Media'],
    operationId: 'mediaJob',
    summary: 'Job status and stored assets (buyer-signed)',
    parameters: [idParam, ...signed],
    responses: { 200: t.json(Job, 'The job'), ...authErrors, 404: t.json(MediaError, 'job_not_found (also for another buyer’s job)') },
  });
  t.route({
    method: 'delete',
    path: '/v1/inference/media/jobs/{id}',
    tags: ['Media'],
    operationId: 'mediaCancelJob',
    summary: 'Request cancellation (buyer-signed); refunded once the provider confirms',
    parameters: [idParam, ...signed],
    responses: {
      202: t.json(z.object({ jobId: z.string(), state: z.literal('cancelling') }), 'Cancellation requested'),
      ...authErrors,
      404: t.json(MediaError, 'job_not_found'),
      409: t.json(MediaError, 'job_finished or job_not_cancellable (images)'),
    },
  });
  t.route({
    method: 'get',
    path: '/v1/inference/media/library',
    tags: ['Media'],
    operationId: 'mediaLibrary',
    summary: 'Pages of the buyer’s assets, newest first (buyer-signed)',
    parameters: [
      { name: 'kind', in: 'query', required: false, schema: { type: 'string', enum: ['image', 'video', 'music'] } },
      { name: 'cursor', in: 'query', required: false, schema: { type: 'string' } },
      { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100 } },
      ...signed,
    ],
    responses: {
      200: t.json(z.object({ data: z.array(Asset), nextCursor: z.string().nullable() }), 'One page'),
      400: t.json(MediaError, 'invalid_request or invalid_cursor'),
      ...authErrors,
    },
  });
  t.route({
    method: 'get',
    path: '/v1/inference/media/assets/{id}',
    tags: ['Media'],
    operationId: 'mediaAsset',
    summary: 'One asset (buyer-signed)',
    parameters: [idParam, ...signed],
    responses: { 200: t.json(Asset, 'The asset'), ...authErrors, 404: t.json(MediaError, 'asset_not_found') },
  });
  t.route({
    method: 'delete',
    path: '/v1/inference/media/assets/{id}',
    tags: ['Media'],
    operationId: 'mediaDeleteAsset',
    summary: 'Delete the asset and its object, then purge the CDN cache (buyer-signed)',
    parameters: [idParam, ...signed],
    responses: {
      200: t.json(
        z.object({ id: z.string(), deleted: z.literal(true), purged: z.boolean().nullable() }),
        'Deleted; `purged` is null without a purge hook',
      ),
      ...authErrors,
      404: t.json(MediaError, 'asset_not_found'),
    },
  });
  t.route({
    method: 'get',
    path: '/media/{job}/{file}',
    tags: ['Media'],
    operationId: 'mediaObject',
    summary: 'A stored object of the filesystem store ({media_url} = {publicUrl}/media)',
    parameters: [
      { name: 'job', in: 'path', required: true, schema: { type: 'string' } },
      { name: 'file', in: 'path', required: true, schema: { type: 'string' } },
    ],
    responses: {
      200: { description: 'The object bytes', content: { 'application/octet-stream': { schema: z.string() } } },
      404: t.json(MediaError, 'object_not_found'),
    },
  });
}
