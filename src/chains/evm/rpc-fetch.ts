import * as http from 'node:http';
import * as https from 'node:https';

/**
 * The `fetchFn` of our JSON-RPC transport: one POST over Node's own http(s) client, kept-alive
 * sockets per process, the whole reply read as text. Node's `fetch` (undici's WHATWG pipeline and a
 * body stream per reply) cost ~0.6 ms of CPU per call against ~0.16, and a settlement makes four or five calls
 * (measured in docs/decisions/compiled-statements-and-rpc-fetch.md). viem reads only `ok`, `status`,
 * `statusText`, `headers`, `body` (null here: the text is already read) and `text()` of the reply.
 * Not followed, unlike fetch: redirects (an RPC endpoint answers its POSTs itself). No compression is
 * asked for, so none is sent.
 */
// An idle socket closes after 4 s (earlier if the server's Keep-Alive says so, which Node honours
// only with a timeout set), as fetch's do: a socket the server already closed is rarely reused.
const agents = {
  'http:': new http.Agent({ keepAlive: true, timeout: 4_000 }),
  'https:': new https.Agent({ keepAlive: true, timeout: 4_000 }),
};

/** viem's own default cap on a reply (`maxResponseBodySize`), enforced while reading instead of after. */
export const MAX_RPC_REPLY_BYTES = 10 * 1024 * 1024;

export const rpcFetch = ((input: string | URL, init: RequestInit = {}): Promise<Response> =>
  new Promise((resolve, reject) => {
    const url = new URL(String(input));
    const agent = agents[url.protocol as keyof typeof agents];
    if (!agent) return reject(new TypeError(`unsupported RPC URL scheme ${url.protocol}`));
    const signal = init.signal ?? undefined;
    if (signal?.aborted) return reject(signal.reason);
    const send = url.protocol === 'https:' ? https.request : http.request;
    const req = send(url, { method: init.method ?? 'POST', headers: init.headers as http.OutgoingHttpHeaders, agent }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_RPC_REPLY_BYTES) return req.destroy(new Error(`RPC reply over ${MAX_RPC_REPLY_BYTES} bytes`));
        chunks.push(chunk);
      });
      res.on('error', (err) => {
        signal?.removeEventListener('abort', onAbort);
        reject(err);
      });
      res.on('end', () => {
        signal?.removeEventListener('abort', onAbort);
        try {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
          const reply = {
            ok: status >= 200 && status < 300,
            status,
            statusText: res.statusMessage ?? '',
            headers,
            body: null,
            text: async () => text,
          };
          resolve(reply as unknown as Response);
        } catch (err) {
          reject(err); // not thrown out of an event handler, where it would end the process
        }
      });
    });
    // Rejects with the signal's own reason (viem's timeout tells its abort by the name AbortError).
    const onAbort = () => {
      reject(signal!.reason);
      req.destroy();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', (err) => {
      signal?.removeEventListener('abort', onAbort);
      reject(err);
    });
    req.end(init.body as string | undefined);
  })) as typeof fetch;

/**
 * `fetchFn` cutting a provider's `Retry-After` (on 429 and 503) to `maxMs`, in whole seconds (viem
 * waits `Retry-After` seconds before each of its retries, however long the provider asks): under
 * 1 s the header is dropped and viem's own back-off applies. See EvmNetwork.rpcRetryAfterMaxMs.
 */
export function cappedRetryAfter(fetchFn: typeof fetch, maxMs: number): typeof fetch {
  const maxSeconds = Math.floor(maxMs / 1000);
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const reply = await fetchFn(input, init);
    const asked = reply.headers.get('retry-after');
    if (asked === null || (reply.status !== 429 && reply.status !== 503)) return reply;
    const seconds = /^\d+$/.test(asked.trim()) ? Number(asked.trim()) : (Date.parse(asked) - Date.now()) / 1000;
    if (!(seconds > maxSeconds)) return reply;
    if (maxSeconds > 0) reply.headers.set('retry-after', String(maxSeconds));
    else reply.headers.delete('retry-after');
    return reply;
  }) as typeof fetch;
}
