import { isIPv6 } from 'node:net';
import type { Middleware } from 'koa';
import Redis from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../config';
import { ApiError } from '../errors';
import type { Logger } from '../logger';
import type { HttpContext, HttpState } from './context';

export type RateLimitConfig = Pick<
  Config,
  | 'RATE_LIMIT_WINDOW_SECONDS'
  | 'RATE_LIMIT_IP'
  | 'RATE_LIMIT_AUTH_IP'
  | 'RATE_LIMIT_KEY'
  | 'REDIS_URL'
  | 'RATE_LIMIT_PREFIX'
  | 'GAS_BUDGET_PER_ORG'
  | 'GAS_BUDGET_WINDOW_SECONDS'
>;

/** Probes and scrapes are never limited: a busy client must not make us look down. */
const EXEMPT = new Set(['/healthz', '/metrics']);

/**
 * Per-IP and per-caller request budgets (rate-limiter-flexible). With REDIS_URL the counters are in
 * Redis, so every API process shares them; if Redis is unreachable each process falls back to its
 * own in-memory counters (the insurance limiter) rather than failing open or refusing everyone.
 */
export class RateLimits {
  private readonly ip: RateLimiterAbstract;
  private readonly authIp: RateLimiterAbstract;
  private readonly caller: RateLimiterAbstract;
  private readonly gas: RateLimiterAbstract;
  private readonly redis?: Redis;

  constructor(config: RateLimitConfig, logger?: Logger) {
    if (config.REDIS_URL) {
      this.redis = new Redis(config.REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: false });
      this.redis.on('error', (err) => logger?.warn({ err: err.message }, 'rate-limit redis unavailable; counting in memory'));
    }
    const limiter = (name: string, points: number, duration = config.RATE_LIMIT_WINDOW_SECONDS): RateLimiterAbstract => {
      const keyPrefix = `${config.RATE_LIMIT_PREFIX}:${name}`;
      const memory = new RateLimiterMemory({ points, duration, keyPrefix });
      return this.redis ? new RateLimiterRedis({ storeClient: this.redis, points, duration, keyPrefix, insuranceLimiter: memory }) : memory;
    };
    this.ip = limiter('ip', config.RATE_LIMIT_IP);
    this.authIp = limiter('auth-ip', config.RATE_LIMIT_AUTH_IP);
    this.caller = limiter('caller', config.RATE_LIMIT_KEY);
    this.gas = limiter('gas', config.GAS_BUDGET_PER_ORG, config.GAS_BUDGET_WINDOW_SECONDS);
  }

  /**
   * Every route but the probes: the client address's budget, and sign-in's stricter one. A request
   * that presents credentials (`opts.credentials`, the API's) is not counted against its address
   * once it authenticates (ctx.state.auth): a seller's backend, one address, is limited by its key's
   * budget (`consumeCaller`), whatever that allows. Such a request is still refused when its address
   * has spent its budget, and charged to it when it does not authenticate, so made-up keys do not
   * escape the address budget.
   */
  middleware(opts: { credentials?: (ctx: HttpContext) => boolean } = {}): Middleware<HttpState> {
    return async (ctx, next) => {
      if (EXEMPT.has(ctx.path)) return next();
      const address = clientAddressKey(ctx.ip);
      const credentials = opts.credentials?.(ctx) ?? false;
      if (credentials) await refuseIfSpent(this.ip, address, 'too many requests from this address');
      else await consume(this.ip, address, 'too many requests from this address');
      if (ctx.path.startsWith('/v1/auth/')) await consume(this.authIp, address, 'too many sign-in requests from this address');
      if (!credentials) return next();
      try {
        await next();
      } finally {
        if (!ctx.state.auth) await this.ip.consume(address).catch(() => undefined);
      }
    };
  }

  /** Once authenticated: the API key's (or session's) own budget, whatever addresses it comes from. */
  async consumeCaller(caller: string): Promise<void> {
    await consume(this.caller, caller, 'too many requests for this API key');
  }

  /**
   * Charges `gas` to the organization's gas budget (GAS_BUDGET_PER_ORG per GAS_BUDGET_WINDOW_SECONDS):
   * 429 with `Retry-After` once it is spent. Called before a workflow that makes the relayer sign starts.
   */
  async chargeGas(organizationId: string, gas: bigint): Promise<void> {
    await consume(this.gas, `org:${organizationId}`, 'this organization has used its gas budget for the window', Number(gas));
  }

  /** Gives a charge back: the request attached to a workflow that was already running (charged once). */
  async refundGas(organizationId: string, gas: bigint): Promise<void> {
    await this.gas.reward(`org:${organizationId}`, Number(gas)).catch(() => undefined);
  }

  /** Resolves once Redis is connected (or at once without it), at most after `timeoutMs`: start-up waits for it. */
  async ready(timeoutMs = 2000): Promise<void> {
    const redis = this.redis;
    if (!redis || redis.status === 'ready') return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      redis.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  async close(): Promise<void> {
    this.redis?.disconnect();
  }
}

/**
 * The rate-limit key of a client address: an IPv4 address as is (an IPv4-mapped IPv6 one as its
 * IPv4 form), an IPv6 address by its /64 prefix, the smallest block one subscriber is given, so an
 * attacker cannot get a fresh budget per address of its own network.
 */
export function clientAddressKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (!isIPv6(ip)) return ip;
  const [head, tail = ''] = ip.split('%')[0]!.split('::') as [string, string?];
  const parts = (s: string) => (s === '' ? [] : s.split(':'));
  let groups = parts(head);
  if (ip.includes('::')) {
    const rest = parts(tail);
    // An embedded IPv4 tail counts as two groups; only the first four groups matter here.
    const width = rest.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
    groups = [...groups, ...Array<string>(8 - groups.length - width).fill('0'), ...rest];
  }
  const prefix = groups.slice(0, 4).map((g) => (parseInt(g, 16) || 0).toString(16));
  return `${prefix.join(':')}::/64`;
}

/** 429 if `key` has spent its budget, without spending any of it. */
async function refuseIfSpent(limiter: RateLimiterAbstract, key: string, message: string): Promise<void> {
  const res = await limiter.get(key).catch(() => null);
  if (res && res.consumedPoints >= limiter.points) throw tooMany(message, res);
}

const tooMany = (message: string, res: RateLimiterRes) => {
  const seconds = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
  return new ApiError(429, `${message}; retry in ${seconds} s`, { 'Retry-After': String(seconds) });
};

async function consume(limiter: RateLimiterAbstract, key: string, message: string, points = 1): Promise<void> {
  try {
    await limiter.consume(key, points);
  } catch (rejected) {
    if (!(rejected instanceof RateLimiterRes)) throw rejected;
    throw tooMany(message, rejected);
  }
}
