/**
 * Devnet double of an OpenAI-compatible inference provider (a third-party service: DESIGN §3).
 * It speaks the real HTTP contract, so the service reaches it only through a configured base URL and
 * a real provider works by configuration:
 *
 *   GET  /v1/models             {object: list, data: [{id, object: model, created, owned_by}]}
 *   POST /v1/chat/completions   {model, messages, stream}: with stream true, OpenAI's SSE chunks
 *                               (`data: {chat.completion.chunk}` ... `data: [DONE]`), else one completion
 *   GET  /v1/templates          the templates source: {data: [{name, label, prompt}]}
 *
 * Test controls (devnet only, not part of the provider contract):
 *   - latency: `firstByteDelayMs` and `tokenDelayMs` options (env INFERENCE_DOUBLE_*), or per request a
 *     directive in the last user message: `#first-byte-delay=<ms>`, `#token-delay=<ms>`;
 *   - failure: `#fail-before-first-byte` (503 before any byte), `#fail-mid-stream` (the connection is
 *     cut after half of the reply, without [DONE]);
 *   - GET /__double/streams lists every chat stream with its model, full reply and how it ended
 *     (`completed`, `aborted` when the caller went away, `failed` when we cut it).
 *
 * The reply is deterministic: `[<model>/<system prompt's first word>] You said: <last user message>`,
 * streamed one word per chunk.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface DoubleTemplate {
  name: string;
  label: string;
  /** System prompt the service sends for this template. */
  prompt: string;
}

export const DEFAULT_TEMPLATES: DoubleTemplate[] = [
  { name: 'logical', label: 'Logical', prompt: 'Logical: answer step by step, precisely.' },
  { name: 'creative', label: 'Creative', prompt: 'Creative: answer with imagination.' },
  { name: 'summary', label: 'Summary', prompt: 'Summary: answer in a few sentences.' },
  { name: 'code-beginner', label: 'Code (beginner)', prompt: 'Code-beginner: explain code simply.' },
  { name: 'code-advanced', label: 'Code (advanced)', prompt: 'Code-advanced: answer as a senior engineer.' },
];

export interface InferenceDoubleOptions {
  models: string[];
  templates?: DoubleTemplate[];
  /** Bearer key callers must send; none required when unset. */
  apiKey?: string;
  firstByteDelayMs?: number;
  tokenDelayMs?: number;
  port?: number;
  host?: string;
}

export interface StreamRecord {
  id: string;
  model: string;
  /** The last user message it answered. */
  prompt: string;
  content: string;
  state: 'streaming' | 'completed' | 'aborted' | 'failed';
}

export interface InferenceDouble {
  /** Base URL of the OpenAI-compatible API (ends in /v1). */
  url: string;
  port: number;
  streams: StreamRecord[];
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The reply the double gives: the caller can compute it too. */
export function doubleReply(model: string, messages: { role: string; content: string }[]): string {
  const system = messages.find((m) => m.role === 'system')?.content ?? '';
  const lastUser = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  const style = system.split(/[\s:]/)[0] || 'plain';
  return `[${model}/${style}] You said: ${lastUser}`;
}

const directive = (text: string, name: string): number | undefined => {
  const m = new RegExp(`#${name}=(\\d+)`).exec(text);
  return m ? Number(m[1]) : undefined;
};

export async function startInferenceProvider(opts: InferenceDoubleOptions): Promise<InferenceDouble> {
  const templates = opts.templates ?? DEFAULT_TEMPLATES;
  const streams: StreamRecord[] = [];
  const created = Math.floor(Date.now() / 1000);

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const oaiError = (res: ServerResponse, status: number, message: string, code: string) =>
    send(res, status, { error: { message, type: 'invalid_request_error', code } });

  const readJson = async (req: IncomingMessage): Promise<any> => {
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    return JSON.parse(Buffer.concat(parts).toString('utf8') || '{}');
  };

  async function chat(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body: any;
    try {
      body = await readJson(req);
    } catch {
      return oaiError(res, 400, 'malformed JSON', 'invalid_json');
    }
    const model = String(body?.model ?? '');
    const messages: { role: string; content: string }[] = Array.isArray(body?.messages) ? body.messages : [];
    if (!opts.models.includes(model)) return oaiError(res, 404, `The model '${model}' does not exist`, 'model_not_found');
    if (messages.length === 0) return oaiError(res, 400, 'messages must not be empty', 'invalid_messages');
    const lastUser = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
    const reply = doubleReply(model, messages);
    const tokens = reply.match(/\S+\s*/g) ?? [];
    const firstByteDelay = directive(lastUser, 'first-byte-delay') ?? opts.firstByteDelayMs ?? 0;
    const tokenDelay = directive(lastUser, 'token-delay') ?? opts.tokenDelayMs ?? 0;
    const id = `chatcmpl-${randomBytes(12).toString('hex')}`;

    let gone = false;
    res.on('close', () => {
      gone = !res.writableFinished;
    });
    if (firstByteDelay) await sleep(firstByteDelay);
    if (lastUser.includes('#fail-before-first-byte')) {
      streams.push({ id, model, prompt: lastUser, content: '', state: 'failed' });
      return send(res, 503, { error: { message: 'the model is overloaded', type: 'server_error', code: 'overloaded' } });
    }
    if (!body.stream) {
      streams.push({ id, model, prompt: lastUser, content: reply, state: 'completed' });
      return send(res, 200, {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }],
      });
    }

    const record: StreamRecord = { id, model, prompt: lastUser, content: '', state: 'streaming' };
    streams.push(record);
    res.on('close', () => {
      if (record.state === 'streaming') record.state = 'aborted';
    });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const chunk = (delta: Record<string, string>, finish: string | null) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    res.write(chunk({ role: 'assistant', content: '' }, null));
    const failAt = lastUser.includes('#fail-mid-stream') ? Math.floor(tokens.length / 2) : -1;
    for (let i = 0; i < tokens.length; i++) {
      if (gone || record.state !== 'streaming') return;
      if (i === failAt) {
        record.state = 'failed';
        res.destroy(); // the connection drops mid-reply: no finish chunk, no [DONE]
        return;
      }
      if (tokenDelay) await sleep(tokenDelay);
      if (gone || record.state !== 'streaming') return;
      res.write(chunk({ content: tokens[i]! }, null));
      record.content += tokens[i];
    }
    res.write(chunk({}, 'stop'));
    res.end('data: [DONE]\n\n');
    record.state = 'completed';
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/__double/streams' && req.method === 'GET') return send(res, 200, { data: streams });
    if (opts.apiKey && req.headers.authorization !== `Bearer ${opts.apiKey}`) {
      return send(res, 401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } });
    }
    if (path === '/v1/models' && req.method === 'GET') {
      return send(res, 200, { object: 'list', data: opts.models.map((id) => ({ id, object: 'model', created, owned_by: 'devnet' })) });
    }
    if (path === '/v1/templates' && req.method === 'GET') return send(res, 200, { data: templates });
    if (path === '/v1/chat/completions' && req.method === 'POST') return chat(req, res);
    return oaiError(res, 404, `no route ${req.method} ${path}`, 'not_found');
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) send(res, 500, { error: { message: 'internal error', type: 'server_error' } });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${opts.host ?? '127.0.0.1'}:${port}/v1`,
    port,
    streams,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The devnet's two providers, as the spec's model ids suggest (`modelserver:24B` is the default,
 * `modelserver2:6b` the small one): what `npm start` and the Jest global setup run. `ports` default
 * to free ports. `providersJson` is the INFERENCE_PROVIDERS value that points the service at them.
 */
export async function startDevnetInferenceProviders(ports: { modelserver?: number; modelserver2?: number } = {}) {
  const tokenDelayMs = Number(process.env.INFERENCE_DOUBLE_TOKEN_DELAY_MS ?? 2);
  const firstByteDelayMs = Number(process.env.INFERENCE_DOUBLE_FIRST_BYTE_DELAY_MS ?? 20);
  const [modelserver, modelserver2] = await Promise.all([
    startInferenceProvider({ models: ['24B', '12B'], port: ports.modelserver, tokenDelayMs, firstByteDelayMs }),
    startInferenceProvider({ models: ['6b'], port: ports.modelserver2, tokenDelayMs, firstByteDelayMs }),
  ]);
  const providersJson = JSON.stringify([
    { id: 'modelserver', label: 'Model server', baseUrl: modelserver.url },
    { id: 'modelserver2', label: 'Model server 2', baseUrl: modelserver2.url },
  ]);
  return {
    modelserver,
    modelserver2,
    providersJson,
    templatesUrl: `${modelserver.url}/templates`,
    stop: () => Promise.all([modelserver.stop(), modelserver2.stop()]).then(() => undefined),
  };
}

// `tsx devnet/inference-provider.ts`: the two devnet providers on 8600 and 8601 until Ctrl-C.
if (require.main === module) {
  startDevnetInferenceProviders({ modelserver: 8600, modelserver2: 8601 }).then((p) => {
    process.stdout.write(`inference providers: modelserver ${p.modelserver.url}, modelserver2 ${p.modelserver2.url}\n`);
    process.once('SIGINT', () => void p.stop().then(() => process.exit(0)));
  });
}
