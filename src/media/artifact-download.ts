import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { pipeline, Transform, type TransformCallback } from 'node:stream';
import { redactUrls } from '../observability/redact';

/**
 * Downloading a media provider's artifact without letting the provider's answer point us anywhere
 * else (server-side request forgery): the URL's host must be on the provider's allow-list
 * (`MEDIA_ARTIFACT_HOSTS`), it must resolve to public addresses only, and the connection goes to the
 * address that was checked (resolved once, inside the socket's own lookup, so a DNS answer that
 * changes between the check and the connection cannot point it at our network). Redirects are
 * followed only to hosts that pass the same rules; the body streams through a byte cap.
 */

/** Why a download was refused: the provider named something we never fetch (not worth a retry). */
export class ArtifactRefused extends Error {}
/** A download that failed in a way a retry may mend (network, a non-2xx answer). */
export class ArtifactUnavailable extends Error {}

/**
 * Address ranges an artifact never comes from: IANA's special-purpose registries (this network,
 * private, shared, loopback, link-local, documentation, benchmarking, multicast, reserved), and the
 * IPv6 ranges that embed or translate an IPv4 address (IPv4-compatible, NAT64, 6to4, Teredo), whose
 * IPv4 part could be any of those. IPv4-mapped IPv6 addresses are checked as their IPv4 address
 * (net.BlockList does that).
 */
const SPECIAL_RANGES: [string, number, 'ipv4' | 'ipv6'][] = [
  ['0.0.0.0', 8, 'ipv4'],
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'],
  ['192.0.2.0', 24, 'ipv4'],
  ['192.88.99.0', 24, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'],
  ['198.51.100.0', 24, 'ipv4'],
  ['203.0.113.0', 24, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['240.0.0.0', 4, 'ipv4'],
  ['::', 96, 'ipv6'], // unspecified, loopback, IPv4-compatible
  ['64:ff9b::', 96, 'ipv6'],
  ['64:ff9b:1::', 48, 'ipv6'],
  ['100::', 64, 'ipv6'],
  ['2001::', 23, 'ipv6'],
  ['2001:db8::', 32, 'ipv6'],
  ['2002::', 16, 'ipv6'],
  ['fc00::', 7, 'ipv6'],
  ['fe80::', 10, 'ipv6'],
  ['fec0::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
];
const SPECIAL = new BlockList();
for (const [net, prefix, family] of SPECIAL_RANGES) SPECIAL.addSubnet(net, prefix, family);

/** Whether `ip` is an address on the public internet (false for anything in SPECIAL_RANGES, and for what is not an IP address). */
export function isPublicAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 0) return false;
  return !SPECIAL.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}

/** A URL's host as the allow-lists name it: lower case, without IPv6 brackets or a trailing dot. */
export const hostOf = (url: URL) =>
  url.hostname
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');

/** Whether `host` is on `allowed`: an exact name, or under a `*.example.com` entry (its subdomains, not the name itself). */
export function hostAllowed(host: string, allowed: readonly string[]): boolean {
  return allowed.some((entry) => (entry.startsWith('*.') ? host.endsWith(entry.slice(1)) : host === entry));
}

export interface ArtifactRules {
  /** Hosts an artifact (or a redirect) may be on (MEDIA_ARTIFACT_HOSTS). */
  hosts: readonly string[];
  /** Hosts that may resolve to a private address: the devnet double's only (MEDIA_ARTIFACT_PRIVATE_HOSTS; refused in production). */
  privateHosts: readonly string[];
  /** The most bytes one artifact may have (MEDIA_ARTIFACT_MAX_BYTES). */
  maxBytes: number;
}

type Resolve = (host: string, cb: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;
const systemResolve: Resolve = (host, cb) => dnsLookup(host, { all: true }, cb);

/**
 * The socket's lookup for `host`: resolves it once and hands the socket only addresses that passed
 * (every one must be public unless the host may be private), so the connection goes where the check
 * looked. Answers in whichever form the socket asks for (one address, or all of them for
 * happy-eyeballs connections).
 */
export function checkedLookup(mayBePrivate: boolean, resolve: Resolve = systemResolve): LookupFunction {
  return (host, options, callback) => {
    resolve(host, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const refused = mayBePrivate ? undefined : addresses.find((a) => !isPublicAddress(a.address));
      if (refused || addresses.length === 0) {
        const why = refused ? `${host} resolves to ${refused.address}, a private or reserved address` : `${host} has no address`;
        return callback(Object.assign(new ArtifactRefused(why), { code: 'EARTIFACTREFUSED' }), '', 0);
      }
      const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
      if (wanted.length === 0)
        return callback(Object.assign(new Error(`${host} has no IPv${options.family} address`), { code: 'ENOTFOUND' }), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, wanted);
      callback(null, wanted[0]!.address, wanted[0]!.family);
    });
  };
}

/** Refuses a URL the rules do not allow before any connection: scheme, host on the allow-list, an IP literal's range. */
export function checkArtifactUrl(url: URL, rules: Pick<ArtifactRules, 'hosts' | 'privateHosts'>): void {
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new ArtifactRefused(`an artifact URL must be http(s), not ${url.protocol}`);
  const host = hostOf(url);
  if (!hostAllowed(host, rules.hosts)) throw new ArtifactRefused(`the artifact host ${host} is not on MEDIA_ARTIFACT_HOSTS`);
  // An IP literal is connected to without a lookup: its range is checked here.
  if (isIP(host) && !isPublicAddress(host) && !rules.privateHosts.includes(host))
    throw new ArtifactRefused(`the artifact host ${host} is a private or reserved address`);
}

/** Counts what passes and fails the stream with ArtifactRefused once more than `limit` bytes came. */
export class ByteCap extends Transform {
  bytes = 0;
  constructor(readonly limit: number) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) return done(new ArtifactRefused(`the artifact is larger than ${this.limit} bytes`));
    done(null, chunk);
  }
}

/** Redirects followed at most (each one checked like the first URL). */
export const MAX_REDIRECTS = 3;

export interface ArtifactBody {
  /** The body, through the byte cap: it fails with ArtifactRefused past the cap. */
  body: ByteCap;
  /** Content-Length, when the host declared it. */
  length?: number;
}

/**
 * Opens the artifact at `url` under `rules`: the response body as a capped stream, for the store to
 * consume. Throws ArtifactRefused for what the rules refuse (a host off the list, a private address,
 * a redirect elsewhere, a declared length over the cap: nothing of the body is read), and
 * `ArtifactUnavailable` for what may pass on a retry (a network error, a non-2xx answer).
 */
export async function openArtifact(url: string, rules: ArtifactRules, timeoutMs = 120_000, resolve?: Resolve): Promise<ArtifactBody> {
  const signal = AbortSignal.timeout(timeoutMs);
  let current: URL;
  try {
    current = new URL(url);
  } catch {
    throw new ArtifactRefused('the artifact URL is not a URL');
  }
  for (let hop = 0; ; hop++) {
    try {
      checkArtifactUrl(current, rules);
    } catch (err) {
      if (hop > 0 && err instanceof ArtifactRefused) throw new ArtifactRefused(`the artifact download redirected: ${err.message}`);
      throw err;
    }
    const res = await get(current, checkedLookup(rules.privateHosts.includes(hostOf(current)), resolve), signal);
    const status = res.statusCode ?? 0;
    if ([301, 302, 303, 307, 308].includes(status)) {
      res.destroy();
      const location = res.headers.location;
      if (!location) throw new ArtifactUnavailable(`artifact download answered ${status} without a location`);
      if (hop >= MAX_REDIRECTS) throw new ArtifactRefused(`the artifact download redirected more than ${MAX_REDIRECTS} times`);
      try {
        current = new URL(location, current);
      } catch {
        throw new ArtifactRefused('the artifact download redirected to something that is not a URL');
      }
      continue;
    }
    if (status < 200 || status > 299) {
      res.destroy();
      throw new ArtifactUnavailable(`artifact download answered ${status}`);
    }
    const declared = res.headers['content-length'] === undefined ? undefined : Number(res.headers['content-length']);
    if (declared !== undefined && declared > rules.maxBytes) {
      res.destroy();
      throw new ArtifactRefused(`the artifact is larger than ${rules.maxBytes} bytes (it declares ${declared})`);
    }
    const body = new ByteCap(rules.maxBytes);
    // Past the cap (or on a broken connection) the pipeline destroys both: the rest is never read.
    pipeline(res, body, () => undefined);
    return { body, ...(declared !== undefined && Number.isSafeInteger(declared) ? { length: declared } : {}) };
  }
}

function get(url: URL, lookup: LookupFunction, signal: AbortSignal): Promise<IncomingMessage> {
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    // No agent: a fresh connection per download, so no pooled socket skips the lookup's check.
    const req = request(url, { method: 'GET', agent: false, lookup, signal }, resolve);
    req.on('error', (err) => {
      if (err instanceof ArtifactRefused) return reject(err);
      const cause = (err as { cause?: unknown }).cause;
      if (cause instanceof ArtifactRefused) return reject(cause);
      reject(new ArtifactUnavailable(`artifact download failed: ${redactUrls(String(err.message))}`));
    });
    req.end();
  });
}
