import { PassThrough } from 'node:stream';
import type { ProviderConfig } from './config';
import { openChatStream, ProviderFailure, type ChatMessage, type UpstreamStream } from './upstream';

/**
 * Relaying the provider's reply to the buyer as `data: <chunk JSON>` events ending with
 * `data: [DONE]`. Chunks keep OpenAI's shape; `model` is rewritten to the public model id.
 */

export type RelayEnd = { kind: 'delivered' } | { kind: 'client_closed' } | { kind: 'provider_failed'; message: string };

export const sseEvent = (data: unknown) => `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

/** Normalizes one upstream chunk to the spec's chunk shape. */
export function publicChunk(chunk: any, publicModel: string) {
  const choices = Array.isArray(chunk?.choices) ? chunk.choices : [];
  return {
    id: String(chunk?.id ?? ''),
    object: 'chat.completion.chunk',
    model: publicModel,
    choices: choices.map((c: any, i: number) => ({
      index: typeof c?.index === 'number' ? c.index : i,
      delta: {
        ...(typeof c?.delta?.role === 'string' ? { role: c.delta.role } : {}),
        ...(typeof c?.delta?.content === 'string' ? { content: c.delta.content } : {}),
      },
      finish_reason: c?.finish_reason ?? null,
    })),
  };
}

/** Opens the upstream stream; a ProviderFailure here means nothing was received. */
export function openReply(
  provider: ProviderConfig,
  upstreamModel: string,
  messages: ChatMessage[],
  signal: AbortSignal,
  firstByteTimeoutMs: number,
) {
  return openChatStream(provider, upstreamModel, messages, { signal, firstByteTimeoutMs });
}

/** A write the client did not take within the write timeout: the client stalled the stream. */
export class ClientStalled extends Error {
  constructor(ms: number) {
    super(`the client read nothing for ${ms} ms`);
    this.name = 'ClientStalled';
  }
}

export interface RelayOptions {
  /** How long one write may wait for the client to read (INFERENCE_WRITE_TIMEOUT_MS); past it the stream ends as `client_closed`. */
  writeTimeoutMs?: number;
  /** Whether the stream was cut by its time bound (INFERENCE_MAX_STREAM_MS) rather than by the provider. */
  cutByDeadline?: () => boolean;
}

/**
 * Writes the stream into `out` and resolves with how it ended. `clientGone()` tells a client
 * disconnect (the caller aborted upstream) from a provider failure. A cut the client caused is
 * `client_closed`, never refunded: it left, a write waited longer than `writeTimeoutMs` for it to
 * read, or the time bound cut a stream the client held longer than the provider did (the relay
 * waits for a slow reader, so a buyer reading slowly would otherwise get most of the reply and a
 * refund). Only a failure on the provider's side is `provider_failed`: then the `onFailure` text
 * (the refund notice) is written as an `event: error` before the stream ends, without [DONE], so the
 * client knows the reply is incomplete.
 */
export async function relay(
  upstream: UpstreamStream,
  out: PassThrough,
  publicModel: string,
  clientGone: () => boolean,
  onFailure: (message: string) => Promise<unknown>,
  opts: RelayOptions = {},
): Promise<RelayEnd> {
  const started = performance.now();
  let clientMs = 0; // time spent waiting for the client to read
  const write = async (s: string) => {
    const at = performance.now();
    try {
      await writeWithBackpressure(out, s, opts.writeTimeoutMs);
    } finally {
      clientMs += performance.now() - at;
    }
  };
  try {
    await write(sseEvent(publicChunk(upstream.first, publicModel)));
    for await (const chunk of upstream.rest()) await write(sseEvent(publicChunk(chunk, publicModel)));
    if (clientGone()) return { kind: 'client_closed' };
    await write(sseEvent('[DONE]'));
    out.end();
    return { kind: 'delivered' };
  } catch (err) {
    if (err instanceof ClientStalled) {
      out.destroy(); // nothing more is written to a client that reads nothing
      return { kind: 'client_closed' };
    }
    const clientHeldLonger = opts.cutByDeadline?.() === true && clientMs * 2 >= performance.now() - started;
    if (clientGone() || clientHeldLonger) {
      out.end();
      return { kind: 'client_closed' };
    }
    const message = err instanceof ProviderFailure ? err.message : 'the reply could not be relayed';
    const notice = await onFailure(message).catch(() => ({ error: 'provider_failed', message }));
    await write(`event: error\n${sseEvent(notice)}`).catch(() => undefined);
    out.end();
    return { kind: 'provider_failed', message };
  }
}

/**
 * A slow reader must slow the relay down, not make us buffer the whole reply: past the stream's
 * high-water mark we wait for 'drain' (or the client leaving) before pulling the next upstream chunk,
 * so the provider's own TCP window holds the rest. A client that takes nothing for `timeoutMs` has
 * stalled the stream (ClientStalled).
 */
export async function writeWithBackpressure(out: PassThrough, s: string, timeoutMs?: number): Promise<void> {
  if (out.destroyed || out.writableEnded) return;
  if (out.write(s)) return;
  await new Promise<void>((resolve, reject) => {
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => finish(new ClientStalled(timeoutMs)), timeoutMs);
    const done = () => finish();
    function finish(err?: Error) {
      clearTimeout(timer);
      out.off('drain', done);
      out.off('close', done);
      if (err) reject(err);
      else resolve();
    }
    out.on('drain', done);
    out.on('close', done);
  });
}
