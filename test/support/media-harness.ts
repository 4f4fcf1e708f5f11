import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalAccount } from 'viem';
import { waitUntil } from '../../devnet/process';
import type { MediaDoubleJob } from '../../devnet/media-provider';
import { buyerAuthHeaders } from '../../src/media/buyer-auth-client';
import type { DbKind } from './db';
import { request, type JsonResponse } from './http';
import { startSettleHarness, type SettleHarness } from './settle-harness';
import { readStackInfo } from './stack-info';

export const MEDIA = '/v1/inference/media';
export const IMAGE_PRICE = 20_000n;
export const VIDEO_PRICE = 500_000n;
export const MUSIC_PRICE = 200_000n;

/** A tiny HTTP server standing for the CDN purge API: records every POST body. */
export async function startPurgeRecorder() {
  const calls: any[] = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (p) => parts.push(p));
    req.on('end', () => {
      calls.push(JSON.parse(Buffer.concat(parts).toString('utf8') || '{}'));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/purge`,
    calls,
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
}

export interface MediaHarness extends SettleHarness {
  storeDir: string;
  /** A request signed with the buyer headers (fresh nonce), or with the given headers. */
  asBuyer(buyer: LocalAccount, method: string, path: string, headers?: Record<string, string>): Promise<JsonResponse>;
  /** X-PAYMENT of a fresh authorization of `value` from `buyer` to the facilitator. */
  xPayment(buyer: LocalAccount, value: bigint): Promise<string>;
  waitForJob(buyer: LocalAccount, jobId: string, ok: (job: any) => boolean, timeoutMs?: number): Promise<any>;
  providerJobs(): Promise<MediaDoubleJob[]>;
}

export async function startMediaHarness(kind: DbKind, opts: { relayerIndex: number; env?: Record<string, string> }): Promise<MediaHarness> {
  const stack = readStackInfo();
  const storeDir = mkdtempSync(join(tmpdir(), 'x402-media-'));
  const h = await startSettleHarness(kind, {
    relayerIndex: opts.relayerIndex,
    env: { MEDIA_PROVIDER_URL: stack.mediaProviderUrl, MEDIA_STORE_DIR: storeDir, MEDIA_POLL_INTERVAL_MS: '200', ...opts.env },
  });
  const close = h.close;
  const m = h as MediaHarness;
  m.storeDir = storeDir;
  m.asBuyer = async (buyer, method, path, headers) =>
    request(method, `${h.api.baseUrl}${path}`, {
      headers: headers ?? (await buyerAuthHeaders(buyer, { method, url: `${h.api.baseUrl}${path}` })),
    });
  m.xPayment = async (buyer, value) => {
    // Signed as x402 clients sign: valid for the challenge's maxTimeoutSeconds (INFERENCE_PAYMENT_TIMEOUT_SECONDS, 120).
    const validBefore = BigInt(Math.floor(Date.now() / 1000) + 120);
    const { paymentPayload } = await h.pay(buyer, { value, validBefore });
    return Buffer.from(JSON.stringify(paymentPayload)).toString('base64');
  };
  m.waitForJob = (buyer, jobId, ok, timeoutMs = 60_000) =>
    waitUntil(
      `job ${jobId}`,
      async () => {
        const res = await m.asBuyer(buyer, 'GET', `${MEDIA}/jobs/${jobId}`);
        if (res.status !== 200) throw new Error(`GET job: ${res.status} ${JSON.stringify(res.body)}`);
        return ok(res.body) ? res.body : undefined;
      },
      { timeoutMs, intervalMs: 150 },
    );
  m.providerJobs = async () => ((await (await fetch(`${stack.mediaProviderUrl}/__double/jobs`)).json()) as { data: MediaDoubleJob[] }).data;
  m.close = async () => {
    await close();
    rmSync(storeDir, { recursive: true, force: true });
  };
  return m;
}
