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
    throw new MediaProviderError(`media provider unreachable: ${String((err as Error)?.message ?? err)}`, true);
  }
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : {};
  } catch {
    throw new MediaProviderError(`media provider answered ${res.status} with a non-JSON body`, res.status >= 500);
  }
  if (!res.ok) {
    const message = json?.error?.message ?? `HTTP ${res.status}`;
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

/** Downloads one artifact (an expiring upstream link) so it can be stored under a durable URL. */
export async function download(url: string, timeoutMs = 120_000): Promise<Buffer> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    throw new MediaProviderError(`artifact download failed: ${String((err as Error)?.message ?? err)}`, true);
  }
  if (!res.ok) throw new MediaProviderError(`artifact download answered ${res.status}`, true);
  return Buffer.from(await res.arrayBuffer());
}
