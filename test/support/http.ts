import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import type Koa from 'koa';
import { Client, Connection } from '@temporalio/client';
import type { Address, LocalAccount } from 'viem';
import { createSiweMessage } from 'viem/siwe';
import { createApp } from '../../src/api/app';
import { answerClientErrors } from '../../src/http/client-errors';
import type { ServiceDeps } from '../../src/deps';
import type { HttpState } from '../../src/http/context';
import type { RateLimits } from '../../src/http/rate-limit';
import { buildNetworkTable } from '../../src/chains/networks';
import { createLogger } from '../../src/logger';
import { temporalDataConverter } from '../../src/temporal/payload-codec';

/** Real HTTP against the real app: start it on a free port, a cookie jar, and SIWE sign-in. */

export interface StartApiOptions {
  /** Public URL in the config (the SIWE domain is its host). Default: the listening base URL. */
  publicUrl?: string;
  /** Extra test-only routes, mounted after the app's own routers (inside its error handler). */
  mount?: (router: Router<HttpState>, deps: ServiceDeps) => void;
}

export interface RunningApi {
  baseUrl: string;
  /** The app's deps; createApp has put its RateLimits in them. */
  deps: ServiceDeps & { rateLimits?: RateLimits };
  app: Koa<HttpState>;
  close(): Promise<void>;
}

export async function startApi(
  given: Partial<ServiceDeps> & Pick<ServiceDeps, 'db' | 'config'>,
  opts: StartApiOptions = {},
): Promise<RunningApi> {
  const server: Server = createServer();
  answerClientErrors(server); // as serveUntilSignal does for the API process
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // Lazy: never dials Temporal unless a route actually uses the client.
  const ownTemporal = given.temporal
    ? undefined
    : new Client({
        connection: Connection.lazy({ address: given.config.TEMPORAL_ADDRESS }),
        dataConverter: temporalDataConverter(given.config),
      });
  const deps: RunningApi['deps'] = {
    networks: given.networks ?? buildNetworkTable(given.config.env),
    logger: given.logger ?? createLogger(process.env.LOG_LEVEL ?? 'silent', 'test-api'),
    temporal: given.temporal ?? ownTemporal!,
    db: given.db,
    config: { ...given.config, publicUrl: opts.publicUrl ?? baseUrl },
  };
  const app = createApp(deps);
  if (opts.mount) {
    const router = new Router<HttpState>();
    opts.mount(router, deps);
    app.use(router.routes());
  }
  server.on('request', app.callback());
  return {
    baseUrl,
    deps,
    app,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (ownTemporal) await ownTemporal.connection.close();
      await deps.rateLimits?.close();
    },
  };
}

/** A minimal cookie jar: remembers Set-Cookie values (by name) and forgets cleared ones. */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  store(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';').map((s) => s.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      const expires = attrs.find((a) => a.toLowerCase().startsWith('expires='));
      const maxAge = attrs.find((a) => a.toLowerCase().startsWith('max-age='));
      const expired =
        value === '' ||
        (maxAge !== undefined && Number(maxAge.slice(8)) <= 0) ||
        (expires !== undefined && Date.parse(expires.slice(8)) <= Date.now());
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  get(name: string): string | undefined {
    return this.cookies.get(name);
  }

  set(name: string, value: string): void {
    this.cookies.set(name, value);
  }

  /** The Cookie request header ('' when empty). */
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  /** fetch with this jar's cookies, storing any Set-Cookie of the response. */
  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    const cookie = this.header();
    if (cookie && !headers.has('cookie')) headers.set('cookie', cookie);
    const res = await fetch(url, { ...init, headers });
    this.store(res);
    return res;
  }
}

/** GET `url` from another source address of this host (127.0.0.2: not the loopback a local Prometheus uses); a JSON answer. */
export function getFromElsewhere(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { localAddress: '127.0.0.2', headers }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });
}

export interface JsonResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/**
 * One request; `json` is sent as an application/json body. The answer's body is parsed as JSON when
 * it is JSON, else returned as text ('' for no content).
 */
export async function request<T = any>(
  method: string,
  url: string,
  opts: { json?: unknown; body?: string; cookie?: string; headers?: Record<string, string> } = {},
): Promise<JsonResponse<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.cookie) headers.cookie = opts.cookie;
  let body = opts.body;
  if (opts.json !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(opts.json);
  }
  const res = await fetch(url, { method, headers, body });
  const text = await res.text();
  const isJson = (res.headers.get('content-type') ?? '').includes('json');
  return { status: res.status, headers: res.headers, body: (isJson && text ? JSON.parse(text) : text) as T };
}

export async function fetchNonce(baseUrl: string): Promise<string> {
  const res = await request<{ nonce: string }>('GET', `${baseUrl}/v1/auth/nonce`);
  if (res.status !== 200) throw new Error(`GET /v1/auth/nonce: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.nonce;
}

export interface SiweFields {
  domain: string;
  address: string;
  uri: string;
  nonce: string;
  chainId?: number;
  issuedAt?: string;
  expirationTime?: string;
  notBefore?: string;
  statement?: string;
}

/** An EIP-4361 message text, built with viem's SIWE support. */
export function buildSiweMessage(f: SiweFields): string {
  return createSiweMessage({
    domain: f.domain,
    address: f.address as Address,
    uri: f.uri,
    nonce: f.nonce,
    version: '1',
    chainId: f.chainId ?? 1,
    issuedAt: new Date(f.issuedAt ?? Date.now()),
    expirationTime: f.expirationTime ? new Date(f.expirationTime) : undefined,
    notBefore: f.notBefore ? new Date(f.notBefore) : undefined,
    statement: f.statement ?? 'Sign in to the x402 facilitator.',
  });
}

/** A signed verify body for `account` with a fresh server nonce; `fields` overrides message fields. */
export async function signedVerifyBody(
  baseUrl: string,
  account: LocalAccount,
  fields: Partial<SiweFields> = {},
): Promise<{ message: string; signature: string }> {
  const message = buildSiweMessage({
    domain: new URL(baseUrl).host,
    address: account.address,
    uri: baseUrl,
    nonce: fields.nonce ?? (await fetchNonce(baseUrl)),
    ...fields,
  });
  return { message, signature: await account.signMessage({ message }) };
}

/**
 * Signs in with `account` (nonce, SIWE message, signature, verify) and returns the Cookie header
 * carrying the signed `siwe-session` cookie. `fields.domain` is needed when the API's public URL
 * differs from `baseUrl`.
 */
export async function signIn(baseUrl: string, account: LocalAccount, fields: Partial<SiweFields> = {}): Promise<string> {
  const jar = new CookieJar();
  const res = await jar.fetch(`${baseUrl}/v1/auth/verify`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(await signedVerifyBody(baseUrl, account, fields)),
  });
  if (res.status !== 200) throw new Error(`POST /v1/auth/verify: ${res.status} ${await res.text()}`);
  return jar.header();
}
