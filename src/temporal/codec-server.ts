import { timingSafeEqual, createHash } from 'node:crypto';
import Koa from 'koa';
import Router from '@koa/router';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { z } from 'zod';
import type { Config } from '../config';
import { ConfigError } from '../config';
import { jsonBody } from '../http/json-body';
import { securityHeaders } from '../http/security-headers';
import { AesGcmPayloadCodec, isSealed } from './payload-codec';
import { parsePayloadCodecKeys } from './codec-keys';

/**
 * The codec server (Temporal's remote codec protocol: POST /decode and /encode, each
 * `{payloads: [{metadata: {k: base64}, data: base64}]}` in and out) so operators can read sealed
 * payloads in the Temporal UI and CLI. Every call needs `Authorization: Bearer CODEC_SERVER_TOKEN`;
 * browsers may call it from TEMPORAL_UI_URL's origin only. /encode seals whatever it is given, so
 * whoever may call it can forge workflow input: it answers 403 unless CODEC_SERVER_ENCODE is on.
 */

const jsonPayload = z.object({
  metadata: z.record(z.string(), z.string().max(4096)).nullish(),
  data: z.string().nullish(),
});
const body = z.object({ payloads: z.array(jsonPayload).max(10_000) });
type JsonPayload = z.infer<typeof jsonPayload>;

const bytes = (b64: string) => new Uint8Array(Buffer.from(b64, 'base64'));
const fromJson = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, bytes(v)])),
  ...(p.data ? { data: bytes(p.data) } : {}),
});
const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  ...(p.data ? { data: Buffer.from(p.data).toString('base64') } : {}),
});

/** Constant-time comparison of the presented bearer token with the configured one. */
function tokenMatches(header: string | undefined, token: string): boolean {
  const presented = /^Bearer (.+)$/.exec(header ?? '')?.[1] ?? '';
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(presented), digest(token));
}

export type CodecServerConfig = Pick<Config, 'PAYLOAD_CODEC_KEYS' | 'CODEC_SERVER_TOKEN' | 'CODEC_SERVER_ENCODE' | 'TEMPORAL_UI_URL'>;

export function createCodecServer(config: CodecServerConfig): Koa {
  const problems = [
    !config.PAYLOAD_CODEC_KEYS && 'PAYLOAD_CODEC_KEYS: required (the keys the codec server opens payloads with)',
    !config.CODEC_SERVER_TOKEN && 'CODEC_SERVER_TOKEN: required (the bearer token callers present)',
  ].filter(Boolean);
  if (problems.length) throw new ConfigError(`Invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  const codec: PayloadCodec = new AesGcmPayloadCodec(parsePayloadCodecKeys(config.PAYLOAD_CODEC_KEYS!));
  const token = config.CODEC_SERVER_TOKEN!;
  const uiOrigin = new URL(config.TEMPORAL_UI_URL).origin;

  const app = new Koa();
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      const status = (err as { status?: number }).status;
      ctx.status = status && status >= 400 && status < 500 ? status : 500;
      ctx.body = { error: ctx.status < 500 ? (err as Error).message : 'internal error' };
    }
  });
  app.use(securityHeaders());
  // CORS for the Temporal UI, whose page calls the codec server from the operator's browser.
  app.use(async (ctx, next) => {
    if (ctx.get('origin') === uiOrigin) {
      ctx.set('Access-Control-Allow-Origin', uiOrigin);
      ctx.set('Access-Control-Allow-Credentials', 'true');
      ctx.set('Vary', 'Origin');
      if (ctx.method === 'OPTIONS') {
        ctx.set('Access-Control-Allow-Methods', 'POST');
        ctx.set('Access-Control-Allow-Headers', 'authorization, content-type, x-namespace');
        ctx.status = 204;
        return;
      }
    }
    await next();
  });
  app.use(async (ctx, next) => {
    if (!tokenMatches(ctx.get('authorization') || undefined, token)) {
      ctx.set('WWW-Authenticate', 'Bearer');
      ctx.status = 401;
      ctx.body = { error: 'a valid Authorization: Bearer token is required' };
      return;
    }
    await next();
  });

  const router = new Router();
  const route =
    (run: (payloads: Payload[]) => Promise<Payload[]>): Koa.Middleware =>
    async (ctx) => {
      const parsed = body.safeParse(ctx.request.body);
      if (!parsed.success) return ctx.throw(400, 'the body must be {"payloads": [{"metadata": {...}, "data": "base64"}]}');
      try {
        ctx.body = { payloads: (await run(parsed.data.payloads.map(fromJson))).map(toJson) };
      } catch (err) {
        // A payload sealed under another key, tampered, or never sealed: the caller's data, not our fault.
        ctx.throw(422, (err as Error).message);
      }
    };
  // The CLI's --codec-endpoint may name the namespace as a path segment: /{namespace}/decode.
  // Decoding is for display: the CLI and UI also send payloads nobody seals (the SDK's patch markers,
  // search attributes), which pass unchanged; a sealed one that does not open is an error.
  const display = (payloads: Payload[]) => Promise.all(payloads.map(async (p) => (isSealed(p) ? (await codec.decode([p]))[0]! : p)));
  router.post(['/decode', '/:namespace/decode'], jsonBody('8mb'), route(display));
  router.post(
    ['/encode', '/:namespace/encode'],
    jsonBody('8mb'),
    async (ctx, next) => {
      if (!config.CODEC_SERVER_ENCODE)
        ctx.throw(403, 'encoding is off (CODEC_SERVER_ENCODE): it would let the caller forge workflow input');
      await next();
    },
    route((p) => codec.encode(p)),
  );
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
