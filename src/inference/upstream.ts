import { readPrefix } from '../upstream/bounded-body';
import { redactUrls } from '../observability/redact';
import type { ProviderConfig } from './config';

/**
 * One streamed chat completion from an OpenAI-compatible provider: `POST {baseUrl}/chat/completions`
 * with `stream: true`, read as server-sent events. `chunks()` yields each `data:` JSON until
 * `data: [DONE]`; a stream that ends without it, an HTTP error or a cut connection is a
 * ProviderFailure. The caller's signal aborts the upstream request (client went away).
 */

/** One SSE event may not grow past this: a provider that never ends an event cannot fill our memory. */
export const MAX_EVENT_BYTES = 1024 * 1024;
/** How much of a provider's error body we keep, for our logs only. */
const ERROR_BODY_BYTES = 300;

/**
 * `message` is what the buyer sees (no upstream text: it may quote keys, URLs or other users' data);
 * `detail` is the provider's own words, redacted, for our logs.
 */
export class ProviderFailure extends Error {
  constructor(
    message: string,
    /** True when nothing of the reply was received yet. */
    readonly beforeFirstByte: boolean,
    readonly detail?: string,
  ) {
    super(redactUrls(message));
  }
}

export interface ChatMessage {
  role: string;
  content: string;
}

export interface UpstreamStream {
  /** The first parsed chunk, already received. */
  first: unknown;
  /** The remaining chunks (after `first`), until [DONE]. */
  rest(): AsyncGenerator<unknown>;
}

export async function openChatStream(
  provider: ProviderConfig,
  model: string,
  messages: ChatMessage[],
  opts: { signal: AbortSignal; firstByteTimeoutMs: number },
): Promise<UpstreamStream> {
  // One controller for both reasons to stop: the caller's signal, and no first byte in time.
  const controller = new AbortController();
  const onAbort = () => controller.abort(opts.signal.reason);
  if (opts.signal.aborted) onAbort();
  opts.signal.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => controller.abort(new Error(`no reply within ${opts.firstByteTimeoutMs} ms`)), opts.firstByteTimeoutMs);

  let res: Response;
  try {
    res = await fetch(`${provider.baseUrl.replace(/\/$/, '')}/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        ...(provider.apiKey ? { authorization: `Bearer ${provider.apiKey}` } : {}),
      },
      body: JSON.stringify({ model, messages, stream: true }),
      signal: controller.signal,
    });
  } catch (err) {
    clearTimeout(timer);
    throw new ProviderFailure(`provider ${provider.id} unreachable: ${reason(err, controller)}`, true);
  }
  if (!res.ok || !res.body) {
    clearTimeout(timer);
    const text = await readPrefix(res, ERROR_BODY_BYTES).catch(() => '');
    controller.abort();
    throw new ProviderFailure(`provider ${provider.id} answered HTTP ${res.status}`, true, redactUrls(text));
  }

  const events = sseData(res.body, controller);
  let first: IteratorResult<string>;
  try {
    first = await events.next();
  } catch (err) {
    throw new ProviderFailure(`provider ${provider.id} failed before the reply: ${reason(err, controller)}`, true);
  } finally {
    clearTimeout(timer);
  }
  if (first.done || first.value === '[DONE]') throw new ProviderFailure(`provider ${provider.id} sent an empty stream`, true);

  return {
    first: JSON.parse(first.value),
    async *rest() {
      try {
        for (;;) {
          const next = await events.next();
          if (next.done) throw new ProviderFailure(`provider ${provider.id} stream ended before [DONE]`, false);
          if (next.value === '[DONE]') return;
          yield JSON.parse(next.value);
        }
      } catch (err) {
        if (err instanceof ProviderFailure) throw err;
        throw new ProviderFailure(`provider ${provider.id} failed mid-stream: ${reason(err, controller)}`, false);
      } finally {
        opts.signal.removeEventListener('abort', onAbort);
        controller.abort(); // releases the connection if we stop early
      }
    },
  };
}

const reason = (err: unknown, c: AbortController) =>
  c.signal.aborted && c.signal.reason instanceof Error ? c.signal.reason.message : ((err as Error)?.message ?? String(err));

/** The `data:` payloads of a server-sent event stream, one string per event. */
async function* sseData(body: ReadableStream<Uint8Array>, controller: AbortController): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      if (buffer.length > MAX_EVENT_BYTES) throw new Error(`an event longer than ${MAX_EVENT_BYTES} bytes`);
      let end: number;
      while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
        const data = event
          .split(/\r?\n/)
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).replace(/^ /, ''))
          .join('\n');
        if (data) yield data;
      }
    }
  } finally {
    if (controller.signal.aborted) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
