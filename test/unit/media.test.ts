import { createServer, type IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { inflateSync } from 'node:zlib';
import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { makePng } from '../../devnet/media-provider';
import { assetIdOf, costShares } from '../../activities/media';
import { verifyBuyerRequest } from '../../src/media/buyer-auth';
import { buyerAuthHeaders } from '../../src/media/buyer-auth-client';
import { buyerAuthMessage } from '../../src/media/buyer-auth-message';
import { mediaConfig } from '../../src/media/config';
import { decodeCursor, encodeCursor } from '../../src/media/cursor';
import { BODY_SCHEMAS } from '../../src/media/requests';
import { S3Store } from '../../src/media/s3-store';
import { mediaWorkflowId } from '../../src/media/types';

describe('media provider double: PNG output', () => {
  test('makePng writes a valid PNG: signature, IHDR, CRCs, inflatable scanlines', () => {
    const png = makePng('seed', 8);
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    let off = 8;
    const chunks: { type: string; data: Buffer }[] = [];
    const table = Array.from({ length: 256 }, (_, n) => {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      return c >>> 0;
    });
    const crc = (b: Buffer) => {
      let c = 0xffffffff;
      for (const x of b) c = table[(c ^ x) & 0xff]! ^ (c >>> 8);
      return (c ^ 0xffffffff) >>> 0;
    };
    while (off < png.length) {
      const len = png.readUInt32BE(off);
      const type = png.subarray(off + 4, off + 8).toString('ascii');
      const data = png.subarray(off + 8, off + 8 + len);
      expect(png.readUInt32BE(off + 8 + len)).toBe(crc(png.subarray(off + 4, off + 8 + len)));
      chunks.push({ type, data });
      off += 12 + len;
    }
    expect(chunks.map((c) => c.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
    expect(chunks[0]!.data.readUInt32BE(0)).toBe(8);
    expect(chunks[0]!.data.readUInt32BE(4)).toBe(8);
    expect(inflateSync(chunks[1]!.data).length).toBe(8 * (1 + 8 * 3));
    expect(makePng('seed', 8)).toEqual(png);
    expect(makePng('other', 8)).not.toEqual(png);
  });
});

describe('buyer signature', () => {
  const account = privateKeyToAccount(generatePrivateKey());
  const domain = 'api.example:443';
  const url = 'https://api.example:443/v1/inference/media/library?kind=image&limit=2';
  /** An entity manager whose insert enforces the nonce table's primary key. */
  const nonceStore = () => {
    const seen = new Set<string>();
    return {
      seen,
      em: {
        insert: async (_: unknown, row: { nonce: string }) => {
          if (seen.has(row.nonce)) throw new UniqueConstraintViolationException(new Error('duplicate key'));
          seen.add(row.nonce);
        },
      } as unknown as EntityManager,
    };
  };
  const verify = (em: EntityManager, headers: Record<string, string>, req: { method?: string; path?: string; now?: number } = {}) =>
    verifyBuyerRequest(
      em,
      { method: req.method ?? 'GET', path: req.path ?? '/v1/inference/media/library?kind=image&limit=2', header: (n) => headers[n] ?? '' },
      { domain, maxWindowSeconds: 300, now: req.now },
    );

  test('the message binds domain, buyer, method, exact path, nonce and window, one field a line', () => {
    expect(
      buyerAuthMessage({
        domain: 'api.example',
        buyer: '0xABCDEF0000000000000000000000000000000001',
        method: 'get',
        path: '/v1/inference/media/assets/1?x=1',
        nonce: 'n'.repeat(16),
        issuedAt: 100,
        expiresAt: 400,
      }),
    ).toBe(
      [
        'x402 media request',
        'Domain: api.example',
        'Buyer: 0xabcdef0000000000000000000000000000000001',
        'Method: GET',
        'Path: /v1/inference/media/assets/1?x=1',
        `Nonce: ${'n'.repeat(16)}`,
        'Issued At: 100',
        'Expires At: 400',
      ].join('\n'),
    );
  });

  test('the client helper’s headers verify once; the nonce is then spent', async () => {
    const { em, seen } = nonceStore();
    const headers = await buyerAuthHeaders(account, { method: 'GET', url, domain });
    expect(Object.keys(headers).sort()).toEqual([
      'X-Buyer-Address',
      'X-Buyer-Expires-At',
      'X-Buyer-Issued-At',
      'X-Buyer-Nonce',
      'X-Buyer-Signature',
    ]);
    expect(await verify(em, headers)).toEqual({ ok: true, buyer: account.address.toLowerCase() });
    expect(seen.size).toBe(1);
    expect(await verify(em, headers)).toEqual({ ok: false, error: 'buyer_nonce_reused', message: 'this nonce was already used' });
  });

  test('another path, method, domain or query fails; a failed check does not spend the nonce', async () => {
    const { em, seen } = nonceStore();
    const headers = await buyerAuthHeaders(account, { method: 'GET', url, domain });
    expect((await verify(em, headers, { path: '/v1/inference/media/library?kind=image&limit=3' })).ok).toBe(false);
    expect((await verify(em, headers, { method: 'DELETE' })).ok).toBe(false);
    const otherDomain = await buyerAuthHeaders(account, { method: 'GET', url });
    expect(await verify(em, otherDomain)).toMatchObject({ ok: false, error: 'invalid_buyer_signature' });
    expect(seen.size).toBe(0);
    expect((await verify(em, headers)).ok).toBe(true);
  });

  test('window: expired, future, too long, malformed headers', async () => {
    const { em } = nonceStore();
    const now = 1_900_000_000;
    const at = (issuedAt: number, ttlSeconds: number) =>
      buyerAuthHeaders(account, { method: 'GET', url, domain, now: issuedAt, ttlSeconds });
    expect(await verify(em, await at(now - 400, 300), { now })).toMatchObject({ error: 'buyer_auth_expired' });
    expect(await verify(em, await at(now + 120, 60), { now })).toMatchObject({
      error: 'buyer_auth_expired',
      message: 'issued-at is in the future',
    });
    expect(await verify(em, await at(now, 301), { now })).toMatchObject({ error: 'invalid_buyer_auth' });
    expect((await verify(em, await at(now - 10, 60), { now })).ok).toBe(true);
    const good = await at(now, 60);
    expect(await verify(em, {}, { now })).toMatchObject({ error: 'buyer_auth_required' });
    expect(await verify(em, { ...good, 'X-Buyer-Nonce': 'short' }, { now })).toMatchObject({ error: 'invalid_buyer_auth' });
    expect(await verify(em, { ...good, 'X-Buyer-Address': 'bob' }, { now })).toMatchObject({ error: 'invalid_buyer_auth' });
    expect(await verify(em, { ...good, 'X-Buyer-Signature': '0x12' }, { now })).toMatchObject({ error: 'invalid_buyer_auth' });
    expect(await verify(em, { ...good, 'X-Buyer-Issued-At': 'yesterday' }, { now })).toMatchObject({ error: 'invalid_buyer_auth' });
  });
});

describe('library cursor', () => {
  test('round-trips (createdAt, id) and refuses anything else', () => {
    const a = { createdAt: new Date(1_700_000_000_123), id: '0f8fad5b-d9cb-469f-a165-70867728950e' };
    expect(decodeCursor(encodeCursor(a))).toEqual(a);
    expect(decodeCursor('nope!')).toBeUndefined();
    expect(decodeCursor(Buffer.from('12:not-a-uuid').toString('base64url'))).toBeUndefined();
  });
});

describe('media records', () => {
  test('asset ids are UUIDs derived from job and index; cost shares add up to the price', () => {
    expect(assetIdOf('job', 0)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(assetIdOf('job', 0)).toBe(assetIdOf('job', 0));
    expect(assetIdOf('job', 1)).not.toBe(assetIdOf('job', 0));
    expect(costShares('100', 3)).toEqual(['34', '33', '33']);
    expect(costShares('40000', 2)).toEqual(['20000', '20000']);
    expect(mediaWorkflowId('0xABC', 'key-1')).toBe('media:0xabc:key-1');
  });

  test('request bodies: strict, bounded; edits need a PNG', () => {
    expect(BODY_SCHEMAS.images.parse({ prompt: ' a cat ' })).toEqual({ prompt: 'a cat', n: 1 });
    expect(BODY_SCHEMAS.images.safeParse({ prompt: 'x', n: 5 }).success).toBe(false);
    expect(BODY_SCHEMAS.video.safeParse({ prompt: 'x', n: 1 }).success).toBe(false);
    expect(BODY_SCHEMAS.edits.safeParse({ prompt: 'x', image: makePng('s').toString('base64') }).success).toBe(true);
    expect(BODY_SCHEMAS.edits.safeParse({ prompt: 'x', image: Buffer.from('GIF89a...').toString('base64') }).success).toBe(false);
  });
});

describe('media config', () => {
  test('defaults: devnet provider, every kind on, fs store served under {publicUrl}/media', () => {
    const c = mediaConfig({ env: {}, publicUrl: 'https://api.example' });
    expect(c.providerUrl).toBe('http://127.0.0.1:8610');
    expect([...c.capabilities]).toEqual(['image', 'video', 'music']);
    expect(c.mediaUrl).toBe('https://api.example/media');
    expect(c.authDomain).toBe('api.example');
    expect(c.prices).toEqual({ image: '20000', video: '500000', music: '200000' });
  });
  test('capability gate and store settings are checked', () => {
    expect([...mediaConfig({ env: { MEDIA_CAPABILITIES: 'image' } }).capabilities]).toEqual(['image']);
    expect(() => mediaConfig({ env: { MEDIA_CAPABILITIES: 'image,podcast' } })).toThrow(/MEDIA_CAPABILITIES: unknown kind\(s\) podcast/);
    expect(() => mediaConfig({ env: { MEDIA_STORE: 's3' } })).toThrow(/MEDIA_STORE=s3 needs MEDIA_S3_BUCKET and MEDIA_URL/);
    expect(() => mediaConfig({ env: { MEDIA_IMAGE_PRICE: '0' } })).toThrow(/MEDIA_IMAGE_PRICE/);
  });
});

describe('S3 store: request shaping against an S3-compatible endpoint', () => {
  const seen: { method: string; url: string; headers: IncomingHttpHeaders; body: Buffer }[] = [];
  const objects = new Map<string, { body: Buffer; type: string }>();
  let endpoint: string;
  let server: ReturnType<typeof createServer>;
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };

  beforeAll(async () => {
    process.env.AWS_ACCESS_KEY_ID = 'AKIDEXAMPLE';
    process.env.AWS_SECRET_ACCESS_KEY = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
    server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (p) => parts.push(p));
      req.on('end', () => {
        const body = Buffer.concat(parts);
        seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
        const path = req.url!.split('?')[0]!;
        if (req.method === 'PUT') {
          objects.set(path, { body, type: String(req.headers['content-type']) });
          return res.writeHead(200, { etag: '"1"' }).end();
        }
        if (req.method === 'DELETE') {
          objects.delete(path);
          return res.writeHead(204).end();
        }
        const obj = objects.get(path);
        if (!obj) {
          return res
            .writeHead(404, { 'content-type': 'application/xml' })
            .end(
              '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>',
            );
        }
        res.writeHead(200, { 'content-type': obj.type, 'content-length': obj.body.length }).end(obj.body);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    process.env.AWS_ACCESS_KEY_ID = saved.id;
    process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
    if (saved.id === undefined) delete process.env.AWS_ACCESS_KEY_ID;
    if (saved.secret === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
    await new Promise<void>((r) => server.close(() => r()));
  });

  test('put, get, delete: path-style bucket/key, content type, cache control, signed; a missing key is undefined', async () => {
    const store = new S3Store({ bucket: 'media-bucket', region: 'auto', endpoint });
    const png = makePng('s3');
    await store.put('job-1/0.png', png, 'image/png');
    const put = seen.at(-1)!;
    expect(put.method).toBe('PUT');
    expect(put.url.split('?')[0]).toBe('/media-bucket/job-1/0.png');
    expect(put.headers['content-type']).toBe('image/png');
    expect(put.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(String(put.headers.authorization)).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/auto\/s3\/aws4_request/);
    expect(put.body).toEqual(png);

    expect(await store.get('job-1/0.png')).toEqual({ body: png, contentType: 'image/png' });
    expect(seen.at(-1)!.method).toBe('GET');
    await store.delete('job-1/0.png');
    expect(seen.at(-1)).toMatchObject({ method: 'DELETE', url: expect.stringMatching(/^\/media-bucket\/job-1\/0\.png/) });
    expect(await store.get('job-1/0.png')).toBeUndefined();
    await expect(store.put('../etc/passwd', png, 'image/png')).rejects.toThrow(/invalid media key/);
  });

  test('put of a stream: with its length, streamed as it comes (aws-chunked); without one, read first (bounded by its cap)', async () => {
    const store = new S3Store({ bucket: 'media-bucket', region: 'auto', endpoint });
    const png = makePng('s3-stream');
    await store.put('job-2/0.png', Readable.from([png.subarray(0, 10), png.subarray(10)]), 'image/png', png.length);
    expect(seen.at(-1)!.headers).toMatchObject({ 'content-encoding': 'aws-chunked', 'x-amz-decoded-content-length': String(png.length) });
    // Its two chunks, each framed as it came.
    expect([seen.at(-1)!.body.includes(png.subarray(0, 10)), seen.at(-1)!.body.includes(png.subarray(10))]).toEqual([true, true]);
    await store.put('job-2/1.png', Readable.from([png.subarray(0, 10), png.subarray(10)]), 'image/png');
    expect(seen.at(-1)!.headers['content-length']).toBe(String(png.length));
    expect(seen.at(-1)!.body).toEqual(png);
  });
});
