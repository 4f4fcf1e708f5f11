import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deflateSync } from 'node:zlib';

/**
 * Devnet double of a media generation provider (a third party), speaking a small HTTP contract the
 * service reaches only through MEDIA_PROVIDER_URL:
 *
 * - `POST /v1/images/generations` `{model, prompt, n?, size?}` and `POST /v1/images/edits`
 *   `{model, prompt, image: base64 PNG}` → `{data: [{b64_json}]}`: real PNG bytes, synchronously.
 * - `POST /v1/jobs` `{kind: video|music, model, prompt, idempotency_key}` → 201 `{id, status}`; the same
 *   idempotency key returns the same job (200), so a retried submission never starts a second one.
 * - `GET /v1/jobs/:id` → `{id, kind, status: queued|running|succeeded|failed|cancelled, progress,
 *   error?, output: [{url, content_type}]}`; output URLs expire (the service must copy them).
 * - `POST /v1/jobs/:id/cancel` → the job (cancelled unless it already finished).
 *
 * Prompt directives drive tests: `#fail` (the job or image fails), `#reject` (an image is refused, 400), `#duration=<ms>` (job length),
 * `#slow-submit=<ms>` (the job is created at once, but the answer to its first submission comes that much later, as a
 * provider's slow answer does).
 * A provider that misbehaves with its artifacts (what the service must refuse): `#artifact-host=<host>` (the output
 * URL names that host, same port and path), `#redirect-to=<host>` (the artifact answers 302 to the same path on that
 * host), `#artifact-bytes=<n>` (the artifact is n bytes, sent without Content-Length as fast as the reader takes it).
 * `GET /__double/jobs` lists every job with its submission count, artifact downloads and bytes sent.
 */

export interface MediaDoubleJob {
  id: string;
  kind: 'video' | 'music';
  model: string;
  prompt: string;
  idempotencyKey: string;
  submissions: number;
  /** Submissions answered so far (one held by `#slow-submit` is not, yet). */
  answers: number;
  createdAt: number;
  durationMs: number;
  fail: boolean;
  cancelledAt?: number;
  /** Requests for its artifact, and the artifact bytes written to them. */
  downloads: number;
  bytesSent: number;
}

export interface MediaProviderDouble {
  url: string;
  jobs: Map<string, MediaDoubleJob>;
  imageRequests: number;
  stop(): Promise<void>;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const crc32 = (buf: Buffer) => {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};
const chunk = (type: string, data: Buffer) => {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
};

/** A valid RGB PNG of `size`×`size` pixels: a gradient whose colour is derived from `seed`. */
export function makePng(seed: string, size = 16): Buffer {
  const h = createHash('sha256').update(seed).digest();
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // truecolour RGB
  const rows: Buffer[] = [];
  for (let y = 0; y < size; y++) {
    const row = Buffer.alloc(1 + size * 3); // filter byte 0 (none)
    for (let x = 0; x < size; x++) {
      row[1 + x * 3] = (h[0]! + x * 8) & 0xff;
      row[2 + x * 3] = (h[1]! + y * 8) & 0xff;
      row[3 + x * 3] = h[2]!;
    }
    rows.push(row);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const directive = (prompt: string, name: string) => {
  const m = new RegExp(`#${name}=(\\d+)`).exec(prompt);
  return m ? Number(m[1]) : undefined;
};
const hostDirective = (prompt: string, name: string) => new RegExp(`#${name}=([^\\s#/]+)`).exec(prompt)?.[1];

/** Bytes of a finished job's artifact (not a real codec: a tagged, deterministic payload). */
/** `base` (the double's own URL) with its host replaced by `host`, when given. */
const onHost = (base: string, host: string | undefined) => {
  if (!host) return base;
  const u = new URL(base);
  u.hostname = host;
  return u.origin;
};

const artifact = (job: MediaDoubleJob) => Buffer.from(`${job.kind === 'video' ? 'MP4' : 'MP3'} devnet artifact ${job.id}\n${job.prompt}\n`);

export async function startMediaProvider(opts: { port?: number; defaultDurationMs?: number } = {}): Promise<MediaProviderDouble> {
  const jobs = new Map<string, MediaDoubleJob>();
  const byKey = new Map<string, string>();
  const double = { url: '', jobs, imageRequests: 0, stop: async () => undefined } as MediaProviderDouble;

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const readJson = async (req: IncomingMessage): Promise<any> => {
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    return JSON.parse(Buffer.concat(parts).toString('utf8') || '{}');
  };
  const statusOf = (job: MediaDoubleJob) => {
    const elapsed = (job.cancelledAt ?? Date.now()) - job.createdAt;
    if (job.cancelledAt !== undefined && elapsed < job.durationMs) return 'cancelled';
    if (elapsed >= job.durationMs) return job.fail ? 'failed' : 'succeeded';
    return elapsed < 100 ? 'queued' : 'running';
  };
  const view = (job: MediaDoubleJob) => {
    const status = statusOf(job);
    const progress = Math.min(100, Math.floor(((Date.now() - job.createdAt) / job.durationMs) * 100));
    const ext = job.kind === 'video' ? 'mp4' : 'mp3';
    return {
      id: job.id,
      kind: job.kind,
      model: job.model,
      status,
      progress: status === 'succeeded' ? 100 : progress,
      ...(status === 'failed' ? { error: 'the renderer crashed' } : {}),
      output:
        status === 'succeeded'
          ? [
              {
                url: `${onHost(double.url, hostDirective(job.prompt, 'artifact-host'))}/files/${job.id}.${ext}?expires=${Date.now() + 600_000}`,
                content_type: job.kind === 'video' ? 'video/mp4' : 'audio/mpeg',
              },
            ]
          : [],
    };
  };

  const server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', 'http://double');
      const path = url.pathname;
      if (req.method === 'POST' && (path === '/v1/images/generations' || path === '/v1/images/edits')) {
        const body = await readJson(req);
        double.imageRequests++;
        const prompt = String(body.prompt ?? '');
        if (!prompt) return send(res, 400, { error: { message: 'prompt is required', code: 'invalid_prompt' } });
        if (path.endsWith('edits') && typeof body.image !== 'string')
          return send(res, 400, { error: { message: 'image is required', code: 'invalid_image' } });
        if (prompt.includes('#reject'))
          return send(res, 400, { error: { message: 'the prompt was refused by the content policy', code: 'content_policy' } });
        if (prompt.includes('#fail')) return send(res, 500, { error: { message: 'the image model crashed', code: 'server_error' } });
        const n = Math.min(4, Math.max(1, Number(body.n ?? 1)));
        const size = Number(String(body.size ?? '16x16').split('x')[0]) || 16;
        const data = Array.from({ length: n }, (_, i) => ({
          b64_json: makePng(`${path}|${body.model}|${prompt}|${body.image ?? ''}|${i}`, Math.min(size, 64)).toString('base64'),
        }));
        return send(res, 200, { created: Math.floor(Date.now() / 1000), data });
      }
      if (req.method === 'POST' && path === '/v1/jobs') {
        const body = await readJson(req);
        const key = String(body.idempotency_key ?? '');
        if (body.kind !== 'video' && body.kind !== 'music')
          return send(res, 400, { error: { message: 'kind must be video or music', code: 'invalid_kind' } });
        if (!key) return send(res, 400, { error: { message: 'idempotency_key is required', code: 'invalid_request' } });
        const existing = byKey.get(key);
        if (existing) {
          const job = jobs.get(existing)!;
          job.submissions++;
          job.answers++;
          return send(res, 200, view(job));
        }
        const prompt = String(body.prompt ?? '');
        const job: MediaDoubleJob = {
          id: randomUUID(),
          kind: body.kind,
          model: String(body.model ?? ''),
          prompt,
          idempotencyKey: key,
          submissions: 1,
          answers: 0,
          createdAt: Date.now(),
          durationMs: directive(prompt, 'duration') ?? opts.defaultDurationMs ?? 1500,
          fail: prompt.includes('#fail'),
          downloads: 0,
          bytesSent: 0,
        };
        jobs.set(job.id, job);
        byKey.set(key, job.id);
        const held = directive(prompt, 'slow-submit');
        if (held) await new Promise((resolve) => setTimeout(resolve, held));
        job.answers++;
        return send(res, 201, view(job));
      }
      const jobMatch = /^\/v1\/jobs\/([0-9a-f-]{36})(\/cancel)?$/.exec(path);
      if (jobMatch) {
        const job = jobs.get(jobMatch[1]!);
        if (!job) return send(res, 404, { error: { message: 'no such job', code: 'not_found' } });
        if (req.method === 'POST' && jobMatch[2]) {
          if (job.cancelledAt === undefined && statusOf(job) !== 'succeeded' && statusOf(job) !== 'failed') job.cancelledAt = Date.now();
          return send(res, 200, view(job));
        }
        if (req.method === 'GET' && !jobMatch[2]) return send(res, 200, view(job));
      }
      const file = /^\/files\/([0-9a-f-]{36})\.(mp4|mp3)$/.exec(path);
      if (req.method === 'GET' && file) {
        const job = jobs.get(file[1]!);
        if (!job || statusOf(job) !== 'succeeded') return send(res, 404, { error: { message: 'no such file' } });
        if (Number(url.searchParams.get('expires')) < Date.now()) return send(res, 403, { error: { message: 'link expired' } });
        job.downloads++;
        const redirect = hostDirective(job.prompt, 'redirect-to');
        if (redirect) return res.writeHead(302, { location: `${onHost(double.url, redirect)}${req.url}` }).end();
        const contentType = job.kind === 'video' ? 'video/mp4' : 'audio/mpeg';
        const size = directive(job.prompt, 'artifact-bytes');
        if (size === undefined) {
          const body = artifact(job);
          job.bytesSent += body.length;
          res.writeHead(200, { 'content-type': contentType });
          return res.end(body);
        }
        // Chunked, no Content-Length: only the reader's cap can stop it; written as fast as it is read.
        res.writeHead(200, { 'content-type': contentType });
        const piece = Buffer.alloc(64 * 1024, 0x2e);
        const pump = () => {
          while (job.bytesSent < size && !res.destroyed) {
            const n = Math.min(piece.length, size - job.bytesSent);
            job.bytesSent += n;
            if (!res.write(piece.subarray(0, n))) return void res.once('drain', pump);
          }
          res.end();
        };
        return pump();
      }
      if (req.method === 'GET' && path === '/__double/jobs') return send(res, 200, { data: [...jobs.values()] });
      send(res, 404, { error: { message: `no route ${req.method} ${path}`, code: 'not_found' } });
    } catch (err) {
      send(res, 400, { error: { message: String(err), code: 'invalid_request' } });
    }
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  double.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  double.stop = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return double;
}

// `tsx devnet/media-provider.ts`: the devnet media provider on 8610 until Ctrl-C.
if (require.main === module) {
  startMediaProvider({ port: 8610 }).then((p) => {
    process.stdout.write(`media provider: ${p.url}\n`);
    process.once('SIGINT', () => void p.stop().then(() => process.exit(0)));
  });
}
