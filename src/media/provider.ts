import { BodyTooLarge, readBoundedText } from '../upstream/bounded-body';
import { ArtifactRefused, ArtifactUnavailable, openArtifact, type ArtifactBody } from './artifact-download';
import { redactUrls } from '../observability/redact';
import type { MediaConfig } from './config';
import type { ProviderJobStatus } from './types';

/**
 * The media provider's HTTP contract (see devnet/media-provider.ts for the double). Errors carry
 * whether retrying can help: 5xx and network errors may, 4xx never.
 */
export class MediaProviderError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** JSON answers carry base64 images (up to `n` of them); anything larger is a broken provider. */
export const MAX_JSON_BYTES = 64 * 1024 * 1024;

async function call<T>(c: MediaConfig, method: string, path: string, body?: unknown, timeoutMs = 60_000): Promise<T> {
  let res: Response;
  try {
    res = await fetch(`${c.providerUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(c.providerApiKey ? { authorization: `Bearer ${c.providerApiKey}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    throw new MediaProviderError(`media provider unreachable: ${redactUrls(String((err as Error)?.message ?? err))}`, true);
  }
  const text = await readBoundedText(res, MAX_JSON_BYTES).catch((err: unknown) => {
    if (err instanceof BodyTooLarge) throw new MediaProviderError(`media provider answered more than ${MAX_JSON_BYTES} bytes`, false);
    throw new MediaProviderError('media provider connection failed while answering', true);
  });
  let json: any;
  try {
    json = text ? JSON.parse(text) : {};
  } catch {
    throw new MediaProviderError(`media provider answered ${res.status} with a non-JSON body`, res.status >= 500);
  }
  if (!res.ok) {
    // The provider's own reason helps the buyer (a refused prompt), cut short and without URLs.
    const message = typeof json?.error?.message === 'string' ? redactUrls(json.error.message).slice(0, 200) : `HTTP ${res.status}`;
    throw new MediaProviderError(`media provider ${method} ${path}: ${res.status} ${message}`, res.status >= 500 || res.status === 429);
  }
  return json as T;
}

export async function generateImages(
  c: MediaConfig,
  req: { model: string; prompt: string; n: number; size?: string; image?: string },
): Promise<Buffer[]> {
  const path = req.image ? '/v1/images/edits' : '/v1/images/generations';
  const out = await call<{ data: { b64_json: string }[] }>(c, 'POST', path, {
    model: req.model,
    prompt: req.prompt,
    n: req.n,
    size: req.size,
    image: req.image,
    response_format: 'b64_json',
  });
  if (!Array.isArray(out.data) || out.data.length === 0) throw new MediaProviderError('media provider returned no images', false);
  return out.data.map((d) => Buffer.from(d.b64_json, 'base64'));
}

export const submitJob = (c: MediaConfig, req: { kind: string; model: string; prompt: string; idempotencyKey: string }) =>
  call<ProviderJobStatus>(c, 'POST', '/v1/jobs', {
    kind: req.kind,
    model: req.model,
    prompt: req.prompt,
    idempotency_key: req.idempotencyKey,
  });

export const jobStatus = (c: MediaConfig, id: string) => call<ProviderJobStatus>(c, 'GET', `/v1/jobs/${encodeURIComponent(id)}`);

export const cancelJob = (c: MediaConfig, id: string) =>
  call<ProviderJobStatus>(c, 'POST', `/v1/jobs/${encodeURIComponent(id)}/cancel`, {});

/**
 * Opens one artifact (an expiring upstream link) so it can be streamed into the store under a durable
 * URL, as `c.artifacts` allows (src/media/artifact-download.ts): what the rules refuse is the
 * provider's failure (not retried), a network error or non-2xx answer may pass on a retry.
 */
export async function download(c: MediaConfig, url: string, timeoutMs = 120_000): Promise<ArtifactBody> {
  try {
    return await openArtifact(url, c.artifacts, timeoutMs);
  } catch (err) {
    throw asProviderError(err);
  }
}

/** A download's failure as the provider's: refused (not retried) or unavailable (retried); anything else as it is. */
export function asProviderError(err: unknown): unknown {
  if (err instanceof ArtifactRefused) return new MediaProviderError(redactUrls(err.message), false);
  if (err instanceof ArtifactUnavailable) return new MediaProviderError(err.message, true);
  return err;
}
