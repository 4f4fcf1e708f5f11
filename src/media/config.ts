import { z } from 'zod';
import { join } from 'node:path';
import { isIP } from 'node:net';
import { ConfigError, isProductionEnv, type Config } from '../config';
import { hostOf, isPublicAddress, type ArtifactRules } from './artifact-download';
import { EVM_NETWORK_IDS } from '../chains/networks';

/**
 * Configuration of media generation, read from the same environment as the rest of the service
 * (`config.env`, MEDIA_* variables), so it needs no edit of the shared config schema. Defaults
 * describe the devnet: the media provider double on 8610 (devnet/media-provider.ts), the filesystem
 * store under .data/media served by the API at `{publicUrl}/media`.
 */

export const MEDIA_KINDS = ['image', 'video', 'music'] as const;
export type MediaKind = (typeof MEDIA_KINDS)[number];

const int = (min: number, max: number) =>
  z.string().regex(/^\d+$/, 'must be a whole number').transform(Number).pipe(z.number().int().min(min).max(max));
const price = z.string().regex(/^[1-9]\d{0,30}$/, 'must be a positive whole number of base units');

const schema = z.object({
  /** Base URL of the media provider (its /v1/images/* and /v1/jobs routes). */
  MEDIA_PROVIDER_URL: z.string().url().default('http://127.0.0.1:8610'),
  MEDIA_PROVIDER_API_KEY: z.string().min(1).optional(),
  /**
   * Comma list of the hosts the provider's artifacts (and their redirects) may be on: a name, or
   * `*.example.com` for its subdomains; default the host of MEDIA_PROVIDER_URL. Each must also
   * resolve to public addresses only (src/media/artifact-download.ts).
   */
  MEDIA_ARTIFACT_HOSTS: z.string().optional(),
  /**
   * Devnet only (refused in production): comma list of artifact hosts that may be private addresses;
   * default outside production the host of MEDIA_PROVIDER_URL when it is a loopback address (the
   * devnet double on 127.0.0.1).
   */
  MEDIA_ARTIFACT_PRIVATE_HOSTS: z.string().optional(),
  /** The most bytes one artifact may have: a larger one is refused (the job is refunded). */
  MEDIA_ARTIFACT_MAX_BYTES: int(1, 8 * 1024 ** 3).default(512 * 1024 * 1024),
  /** Comma list of the kinds that are switched on (capability gate); images may run alone. */
  MEDIA_CAPABILITIES: z.string().default('image,video,music'),
  MEDIA_IMAGE_MODEL: z.string().min(1).default('pixel-1'),
  MEDIA_VIDEO_MODEL: z.string().min(1).default('motion-1'),
  MEDIA_MUSIC_MODEL: z.string().min(1).default('tone-1'),
  /** Price of one generated image (an image request costs n times this), USDC base units. */
  MEDIA_IMAGE_PRICE: price.default('20000'),
  MEDIA_VIDEO_PRICE: price.default('500000'),
  MEDIA_MUSIC_PRICE: price.default('200000'),
  MEDIA_NETWORK: z.enum(EVM_NETWORK_IDS).default('base-sepolia'),
  /** Where stored objects live: `fs` (served by the API under MEDIA_URL) or `s3`. */
  MEDIA_STORE: z.enum(['fs', 's3']).default('fs'),
  MEDIA_STORE_DIR: z.string().min(1).optional(),
  /** Public origin of stored objects ({media_url}); default `{publicUrl}/media` (fs store). */
  MEDIA_URL: z.string().url().optional(),
  MEDIA_S3_BUCKET: z.string().min(1).optional(),
  MEDIA_S3_REGION: z.string().min(1).default('us-east-1'),
  MEDIA_S3_ENDPOINT: z.string().url().optional(),
  /** Called (POST {url, key}) after an asset is deleted, to purge CDN caches. */
  MEDIA_PURGE_URL: z.string().url().optional(),
  /** Interval of the job workflow's status polls (a durable timer each). */
  MEDIA_POLL_INTERVAL_MS: int(50, 600_000).default(2000),
  /** A job not finished by then is cancelled at the provider and refunded. */
  MEDIA_JOB_TIMEOUT_MS: int(1000, 86_400_000).default(1_800_000),
  /** How long POST /images waits for the images before answering 202 with the job id. */
  MEDIA_IMAGE_WAIT_MS: int(100, 600_000).default(60_000),
  /** Buyer signature: longest allowed expires-at minus issued-at, and allowed clock skew. */
  MEDIA_AUTH_MAX_WINDOW_SECONDS: int(10, 3600).default(300),
  /** The domain the buyer signs; default the host of PUBLIC_URL. */
  MEDIA_AUTH_DOMAIN: z.string().min(1).optional(),
});

/** Every MEDIA_* variable the API and worker read. */
export const MEDIA_VARIABLES: readonly string[] = Object.keys(schema.shape);

export interface MediaConfig {
  providerUrl: string;
  providerApiKey?: string;
  /** Where artifacts may be downloaded from (MEDIA_ARTIFACT_*). */
  artifacts: ArtifactRules;
  capabilities: Set<MediaKind>;
  models: Record<MediaKind, string>;
  prices: Record<MediaKind, string>;
  network: (typeof EVM_NETWORK_IDS)[number];
  store: 'fs' | 's3';
  storeDir: string;
  mediaUrl: string;
  s3: { bucket?: string; region: string; endpoint?: string };
  purgeUrl?: string;
  pollIntervalMs: number;
  jobTimeoutMs: number;
  imageWaitMs: number;
  authMaxWindowSeconds: number;
  authDomain: string;
}

const cache = new WeakMap<object, MediaConfig>();

/** Parses (once per config object) the MEDIA_* variables; throws ConfigError naming bad ones. */
/** Price of a request in base units: images cost n times the image price; video and music are fixed. */
export const mediaPrice = (c: Pick<MediaConfig, 'prices'>, kind: MediaKind, n = 1): string =>
  kind === 'image' ? (BigInt(c.prices.image) * BigInt(n)).toString() : c.prices[kind];

const hostList = (v: string) =>
  v
    .split(',')
    .map((h) =>
      h
        .trim()
        .toLowerCase()
        .replace(/^\[(.*)\]$/, '$1')
        .replace(/\.$/, ''),
    )
    .filter(Boolean);

export function mediaConfig(config: Pick<Config, 'env'> & Partial<Pick<Config, 'publicUrl' | 'production'>>): MediaConfig {
  const hit = cache.get(config);
  if (hit) return hit;
  const set = Object.fromEntries(Object.entries(config.env).filter(([k, v]) => k.startsWith('MEDIA_') && v));
  const r = schema.safeParse(set);
  if (!r.success)
    throw new ConfigError(`Invalid configuration:\n${r.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n')}`);
  const c = r.data;
  const caps = c.MEDIA_CAPABILITIES.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = caps.filter((k) => !(MEDIA_KINDS as readonly string[]).includes(k));
  if (unknown.length)
    throw new ConfigError(
      `Invalid configuration:\n  MEDIA_CAPABILITIES: unknown kind(s) ${unknown.join(', ')} (use ${MEDIA_KINDS.join(', ')})`,
    );
  if (c.MEDIA_STORE === 's3' && (!c.MEDIA_S3_BUCKET || !c.MEDIA_URL))
    throw new ConfigError('Invalid configuration:\n  MEDIA_STORE=s3 needs MEDIA_S3_BUCKET and MEDIA_URL');
  const providerHost = hostOf(new URL(c.MEDIA_PROVIDER_URL));
  const production = config.production ?? isProductionEnv(config.env);
  const devnetPrivate = !production && isIP(providerHost) && !isPublicAddress(providerHost) ? [providerHost] : [];
  const publicUrl = (config.publicUrl ?? config.env.PUBLIC_URL ?? `http://localhost:${config.env.PORT ?? 4021}`).replace(/\/$/, '');
  const out: MediaConfig = {
    providerUrl: c.MEDIA_PROVIDER_URL.replace(/\/$/, ''),
    providerApiKey: c.MEDIA_PROVIDER_API_KEY,
    artifacts: {
      hosts: c.MEDIA_ARTIFACT_HOSTS === undefined ? [providerHost] : hostList(c.MEDIA_ARTIFACT_HOSTS),
      privateHosts: c.MEDIA_ARTIFACT_PRIVATE_HOSTS === undefined ? devnetPrivate : hostList(c.MEDIA_ARTIFACT_PRIVATE_HOSTS),
      maxBytes: c.MEDIA_ARTIFACT_MAX_BYTES,
    },
    capabilities: new Set(caps as MediaKind[]),
    models: { image: c.MEDIA_IMAGE_MODEL, video: c.MEDIA_VIDEO_MODEL, music: c.MEDIA_MUSIC_MODEL },
    prices: { image: c.MEDIA_IMAGE_PRICE, video: c.MEDIA_VIDEO_PRICE, music: c.MEDIA_MUSIC_PRICE },
    network: c.MEDIA_NETWORK,
    store: c.MEDIA_STORE,
    storeDir: c.MEDIA_STORE_DIR ?? join(process.cwd(), '.data', 'media'),
    mediaUrl: (c.MEDIA_URL ?? `${publicUrl}/media`).replace(/\/$/, ''),
    s3: { bucket: c.MEDIA_S3_BUCKET, region: c.MEDIA_S3_REGION, endpoint: c.MEDIA_S3_ENDPOINT },
    purgeUrl: c.MEDIA_PURGE_URL,
    pollIntervalMs: c.MEDIA_POLL_INTERVAL_MS,
    jobTimeoutMs: c.MEDIA_JOB_TIMEOUT_MS,
    imageWaitMs: c.MEDIA_IMAGE_WAIT_MS,
    authMaxWindowSeconds: c.MEDIA_AUTH_MAX_WINDOW_SECONDS,
    authDomain: c.MEDIA_AUTH_DOMAIN ?? new URL(publicUrl).host,
  };
  cache.set(config, out);
  return out;
}
