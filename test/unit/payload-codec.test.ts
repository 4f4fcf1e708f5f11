import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { defaultPayloadConverter, METADATA_ENCODING_KEY, type Payload } from '@temporalio/common';
import { ConfigError, loadConfig } from '../../src/config';
import { generatePayloadCodecKey, parsePayloadCodecKeys } from '../../src/temporal/codec-keys';
import { AesGcmPayloadCodec, KEY_ID_METADATA, temporalDataConverter } from '../../src/temporal/payload-codec';
import { createCodecServer } from '../../src/temporal/codec-server';

/**
 * Issue 39: the payload codec seals every Temporal payload with AES-256-GCM under a configured key;
 * decoding refuses plain, tampered and unknown-key payloads; rotation opens old payloads. The codec
 * server answers only with the bearer token.
 */

const codecOf = (keys: string) => new AesGcmPayloadCodec(parsePayloadCodecKeys(keys));
const payload = (value: unknown): Payload => defaultPayloadConverter.toPayload(value)!;
const value = (p: Payload) => defaultPayloadConverter.fromPayload(p);
const input = { payer: '0x' + 'ab'.repeat(20), amount: '1000000000000', payTo: '0x' + 'cd'.repeat(20) };

describe('AES-256-GCM payload codec', () => {
  const k1 = generatePayloadCodecKey('k1');
  const k2 = generatePayloadCodecKey('k2');

  test('round trip: sealed payloads hide the value and the encoding, and open to the same payload', async () => {
    const codec = codecOf(k1);
    const plain = [payload(input), payload(undefined), payload('text')];
    const sealed = await codec.encode(plain);
    expect(sealed).toHaveLength(3);
    for (const s of sealed) {
      expect(Buffer.from(s.metadata![METADATA_ENCODING_KEY]!).toString()).toBe('binary/encrypted');
      expect(Buffer.from(s.metadata![KEY_ID_METADATA]!).toString()).toBe('k1');
      expect(Buffer.from(s.data!).toString('latin1')).not.toContain('1000000000000');
    }
    const opened = await codec.decode(sealed);
    expect(opened.map(value)).toEqual([input, undefined, 'text']);
    expect(Buffer.from(opened[0]!.metadata![METADATA_ENCODING_KEY]!).toString()).toBe('json/plain');
    // A fresh IV each time: the same value never seals to the same bytes.
    const again = await codec.encode([payload(input)]);
    expect(Buffer.from(again[0]!.data!).equals(Buffer.from(sealed[0]!.data!))).toBe(false);
  });

  test('a plain payload (written without the key) is refused', async () => {
    await expect(codecOf(k1).decode([payload(input)])).rejects.toThrow(/not encrypted with our key/);
  });

  test('tampering is detected: a flipped ciphertext bit, a relabelled key id, a truncated payload', async () => {
    const codec = codecOf(`${k1},${k2}`);
    const [sealed] = await codec.encode([payload(input)]);
    const flipped = Buffer.from(sealed!.data!);
    flipped[20] ^= 1;
    await expect(codec.decode([{ ...sealed, data: flipped }])).rejects.toThrow(/does not authenticate under key k1/);
    // The key id is authenticated: the same bytes labelled k2 do not open.
    const relabelled = { ...sealed, metadata: { ...sealed!.metadata, [KEY_ID_METADATA]: Buffer.from('k2') } };
    await expect(codec.decode([relabelled])).rejects.toThrow(/does not authenticate under key k2/);
    await expect(codec.decode([{ ...sealed, data: Buffer.from(sealed!.data!).subarray(0, 20) }])).rejects.toThrow(/too short/);
  });

  test('an unknown key id is refused; sealed under another key of the same id is refused', async () => {
    const [sealed] = await codecOf(k2).encode([payload(input)]);
    await expect(codecOf(k1).decode([sealed!])).rejects.toThrow(/unknown key id "k2"/);
    const [other] = await codecOf(generatePayloadCodecKey('k1')).encode([payload(input)]);
    await expect(codecOf(k1).decode([other!])).rejects.toThrow(/does not authenticate/);
  });

  test('rotation: the first key seals, every listed key opens', async () => {
    const [old] = await codecOf(k1).encode([payload(input)]);
    const rotated = codecOf(`${k2},${k1}`);
    expect(value((await rotated.decode([old!]))[0]!)).toEqual(input);
    const [fresh] = await rotated.encode([payload(input)]);
    expect(Buffer.from(fresh!.metadata![KEY_ID_METADATA]!).toString()).toBe('k2');
    // A process that has not been given the new key yet cannot open what the new key sealed.
    await expect(codecOf(k1).decode([fresh!])).rejects.toThrow(/unknown key id "k2"/);
  });
});

describe('PAYLOAD_CODEC_KEYS configuration', () => {
  const problem = (v: string) => {
    try {
      loadConfig({ PAYLOAD_CODEC_KEYS: v });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    return 'accepted';
  };

  test('malformed and weak keys are refused, naming the variable', () => {
    const b64 = (b: Buffer) => b.toString('base64');
    expect(problem(generatePayloadCodecKey('ok'))).toBe('accepted');
    expect(problem(b64(randomBytes(32)))).toMatch(/PAYLOAD_CODEC_KEYS: each entry must be id:base64key/);
    expect(problem(`k:${b64(randomBytes(16))}`)).toMatch(/PAYLOAD_CODEC_KEYS: key k: must be 32 bytes/);
    expect(problem(`k:${b64(Buffer.alloc(32))}`)).toMatch(/key k: too weak/);
    expect(problem(`k:${b64(Buffer.from('passwordpasswordpasswordpassword'))}`)).toMatch(/key k: too weak/);
    expect(problem('k:not base64!')).toMatch(/key k: not base64/);
    const key = b64(randomBytes(32));
    expect(problem(`a:${key},b:${key}`)).toMatch(/the same key is listed under two ids/);
    expect(problem(`a:${key},a:${b64(randomBytes(32))}`)).toMatch(/key id a is listed twice/);
  });

  test('production needs a key, and not one npm start generated; development may run without', () => {
    const prod = { NODE_ENV: 'production', SESSION_SECRET: 'x'.repeat(40) };
    expect(() => temporalDataConverter(loadConfig(prod))).toThrow(/PAYLOAD_CODEC_KEYS: required in production/);
    expect(() => temporalDataConverter(loadConfig({ ...prod, PAYLOAD_CODEC_KEYS: generatePayloadCodecKey('devnet-1') }))).toThrow(
      /key id devnet-1 is a devnet key/,
    );
    expect(
      temporalDataConverter(loadConfig({ ...prod, PAYLOAD_CODEC_KEYS: generatePayloadCodecKey('prod-2026') })).payloadCodecs,
    ).toHaveLength(1);
    expect(temporalDataConverter(loadConfig({})).payloadCodecs).toBeUndefined();
  });
});

describe('codec server', () => {
  const keys = generatePayloadCodecKey('k1');
  const token = randomBytes(24).toString('hex');
  const ui = 'http://127.0.0.1:8233';
  let server: Server;
  let base: string;

  beforeAll(async () => {
    const app = createCodecServer({ PAYLOAD_CODEC_KEYS: keys, CODEC_SERVER_TOKEN: token, CODEC_SERVER_ENCODE: false, TEMPORAL_UI_URL: ui });
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const toJson = (p: Payload) => ({
    metadata: Object.fromEntries(Object.entries(p.metadata!).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
    data: Buffer.from(p.data!).toString('base64'),
  });
  const post = (path: string, body: unknown, auth?: string) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
      body: JSON.stringify(body),
    });

  test('without the bearer token (or with a wrong one) it answers 401 and decodes nothing', async () => {
    const sealed = (await codecOf(keys).encode([payload(input)])).map(toJson);
    for (const auth of [undefined, `Bearer ${token}x`, token, 'Bearer ']) {
      const res = await post('/decode', { payloads: sealed }, auth);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(await res.text()).not.toContain('1000000000000');
    }
  });

  test('with the token it decodes (also under /{namespace}/decode); plain payloads pass for display; a foreign sealed one is a 422', async () => {
    const sealed = (await codecOf(keys).encode([payload(input), payload('x')])).map(toJson);
    for (const path of ['/decode', '/default/decode']) {
      const res = await post(path, { payloads: sealed }, `Bearer ${token}`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
      expect(body.payloads.map((p) => JSON.parse(Buffer.from(p.data, 'base64').toString()))).toEqual([input, 'x']);
      expect(Buffer.from(body.payloads[0]!.metadata[METADATA_ENCODING_KEY]!, 'base64').toString()).toBe('json/plain');
    }
    // Plain payloads (patch markers, search attributes) are shown as they are; a foreign sealed one is refused.
    const plain = await post('/decode', { payloads: [toJson(payload(input))] }, `Bearer ${token}`);
    expect(plain.status).toBe(200);
    expect(((await plain.json()) as { payloads: unknown[] }).payloads).toEqual([toJson(payload(input))]);
    const foreign = (await codecOf(generatePayloadCodecKey('k1')).encode([payload(input)])).map(toJson);
    const refused = await post('/decode', { payloads: foreign }, `Bearer ${token}`);
    expect(refused.status).toBe(422);
    expect(((await refused.json()) as { error: string }).error).toMatch(/does not authenticate under key k1/);
    const bad = await post('/decode', { payloads: 'nope' }, `Bearer ${token}`);
    expect(bad.status).toBe(400);
  });

  test('/encode is refused (403) unless CODEC_SERVER_ENCODE: it would forge workflow input', async () => {
    const res = await post('/encode', { payloads: [toJson(payload(input))] }, `Bearer ${token}`);
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: string }).error).toMatch(/CODEC_SERVER_ENCODE/);
  });

  test('CORS: the Temporal UI origin may call it with the Authorization header; another origin gets no CORS grant', async () => {
    const preflight = await fetch(`${base}/decode`, {
      method: 'OPTIONS',
      headers: { origin: ui, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(ui);
    expect(preflight.headers.get('access-control-allow-headers')).toContain('authorization');
    const other = await fetch(`${base}/decode`, { method: 'OPTIONS', headers: { origin: 'https://evil.example' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    expect(other.status).toBe(401);
  });

  test('refuses to start without keys or a token', () => {
    expect(() => createCodecServer({ CODEC_SERVER_ENCODE: false, TEMPORAL_UI_URL: ui } as never)).toThrow(
      /PAYLOAD_CODEC_KEYS: required[\s\S]*CODEC_SERVER_TOKEN: required/,
    );
  });
});
