import { z } from 'zod';
import type { Hex } from 'viem';
import { privateKeyToAddress } from 'viem/accounts';
import { DEVNET_DEPOSITOR_ADDRESS } from './chains/devnet-addresses';
import { parsePayloadCodecKeys } from './temporal/codec-keys';

/**
 * The whole service configuration, read once from the environment and validated with zod.
 * Defaults describe the embedded devnet stack that `npm start` runs, so a newcomer sets nothing.
 * A bad value stops start-up with a message that names the variable (see `loadConfig`).
 */

const hexKey = z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'must be a 0x-prefixed 32-byte hex private key');
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte hex address');
/** A whole number written plainly: no '', '0x10' or '1e3' (z.coerce would read '' as 0). */
const int = () => z.string().trim().regex(/^\d+$/, 'must be a whole number').transform(Number).pipe(z.number().int());
const boolish = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');

/** Anvil's well-known dev account #1: the default relayer of the devnet worker. Never use on a real chain. */
export const DEVNET_RELAYER_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
/** Its address (written out, so no process derives it from a key). */
export const DEVNET_RELAYER_ADDRESS = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

/** The devnet's bridge attestation double (`npm start`); never a default in production. */
export const DEVNET_BRIDGE_ATTESTATION_URL = 'http://127.0.0.1:4023';

/**
 * Production mode: NODE_ENV=production, or live (mainnet) settlement switched on. In it no devnet
 * default applies: every key and contract address is explicit (src/production.ts checks them).
 */
export function isProductionEnv(env: Record<string, string | undefined>): boolean {
  return env.NODE_ENV === 'production' || ['true', '1', 'yes'].includes(env.MAINNETS_ENABLED ?? '');
}

const schema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: int().pipe(z.number().min(0).max(65535)).default(4021),
  /** Public origin of the API; SIWE messages must name its host as their domain. */
  PUBLIC_URL: z.string().url().optional(),
  /**
   * Bearer token for GET /metrics. Without it /metrics answers loopback callers only (a Prometheus on
   * the same host or behind the proxy); with it, any caller presenting it.
   */
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /**
   * Traces (src/observability/tracing.ts): when set, every process exports its spans over OTLP/HTTP
   * to `<endpoint>/v1/traces`; unset, no tracing SDK runs.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  /** `host:port` where the worker serves the Temporal SDK's own Prometheus metrics (port 0: a free one, logged); unset, none. */
  WORKER_METRICS_ADDRESS: z
    .string()
    .regex(/^\S+:\d{1,5}$/, 'must look like 0.0.0.0:9464')
    .optional(),
  /**
   * Rate limits (src/http/rate-limit.ts): requests per window per client IP on every route, a
   * stricter budget for sign-in (/v1/auth/*), and per API key or session once authenticated. The
   * counters live in memory, or in Redis when REDIS_URL is set (shared by every API process).
   */
  RATE_LIMIT_WINDOW_SECONDS: int().pipe(z.number().min(1).max(86_400)).default(60),
  RATE_LIMIT_IP: int().pipe(z.number().min(1)).default(1200),
  RATE_LIMIT_AUTH_IP: int().pipe(z.number().min(1)).default(30),
  RATE_LIMIT_KEY: int().pipe(z.number().min(1)).default(6000),
  /**
   * Gas budget per organization (issue 39): the gas its settlements and permits may make the
   * relayer sign per window, charged at the call type's ceiling when a workflow starts
   * (src/chains/evm/gas-ceilings.ts). Past it, 429 with `Retry-After`. Counted with the rate limits.
   */
  GAS_BUDGET_PER_ORG: int().pipe(z.number().min(1)).default(1_000_000_000),
  GAS_BUDGET_WINDOW_SECONDS: int().pipe(z.number().min(1).max(604_800)).default(3_600),
  REDIS_URL: z.string().url().optional(),
  /** Key prefix in Redis, so several deployments (or tests) can share one server. */
  RATE_LIMIT_PREFIX: z.string().min(1).max(64).default('x402rl'),
  /**
   * Behind reverse proxies: how many of them (hops) append to X-Forwarded-For. The client address is
   * the entry the outermost of them appended (Koa's `maxIpsCount`), never the leftmost one, which the
   * client writes itself. `true` is one hop; `false` or 0 ignores the header.
   */
  TRUST_PROXY: z
    .string()
    .trim()
    .regex(/^(true|false|yes|no|\d{1,2})$/, 'must be true, false or a hop count (e.g. 1)')
    .transform((v) => (v === 'true' || v === 'yes' ? 1 : v === 'false' || v === 'no' ? 0 : Number(v)))
    .default(0),
  BODY_LIMIT: z
    .string()
    .regex(/^\d+(b|kb|mb)$/, 'must look like 64kb')
    .default('64kb'),

  TEMPORAL_ADDRESS: z.string().min(1).default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('x402-settlement'),
  TEMPORAL_UI_URL: z.string().url().default('http://127.0.0.1:8233'),
  /**
   * How the client and the worker authenticate to Temporal (docs/security.md): mTLS with a client
   * certificate and key (PEM file paths), the server's CA and name when they are not public, or an
   * API key (Temporal Cloud). TEMPORAL_TLS=true alone is server-authenticated TLS.
   */
  TEMPORAL_TLS: boolish.default(false),
  TEMPORAL_TLS_CERT_PATH: z.string().min(1).optional(),
  TEMPORAL_TLS_KEY_PATH: z.string().min(1).optional(),
  TEMPORAL_TLS_CA_PATH: z.string().min(1).optional(),
  TEMPORAL_TLS_SERVER_NAME: z.string().min(1).optional(),
  TEMPORAL_API_KEY: z.string().min(1).optional(),
  /**
   * The payload codec's keys (src/temporal/payload-codec.ts): `id:base64key[,id:base64key...]`, each
   * key 32 random bytes (`openssl rand -base64 32`); the first seals, all open (rotation). The API,
   * worker, top-up gateway and ops CLI hold the same list. Required in production; `npm start`
   * generates a devnet one; unset in development, payloads are plain.
   */
  PAYLOAD_CODEC_KEYS: z
    .string()
    .trim()
    .superRefine((v, ctx) => {
      try {
        parsePayloadCodecKeys(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
      }
    })
    .optional(),
  /**
   * The codec server (`npm run codec-server`, src/temporal/codec-server.ts): where it listens, the
   * bearer token it requires, and whether it also seals (`/encode`: whoever may call it can forge
   * workflow input, so it is off unless an operator needs it). Browsers may call it from
   * TEMPORAL_UI_URL's origin only.
   */
  CODEC_SERVER_HOST: z.string().min(1).default('127.0.0.1'),
  CODEC_SERVER_PORT: int().pipe(z.number().min(0).max(65535)).default(8888),
  CODEC_SERVER_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
  CODEC_SERVER_ENCODE: boolish.default(false),

  /** PostgreSQL when set (postgres:// or postgresql://); the embedded SQLite file otherwise. */
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  SQLITE_PATH: z.string().min(1).default('.data/facilitator.sqlite'),

  /** HMAC key of the API's `siwe-session` cookie. Required by the API in production (src/production.ts); devnet derives a file-backed one. */
  SESSION_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  SESSION_TTL_SECONDS: int()
    .pipe(z.number().positive())
    .default(8 * 3600),
  SIWE_NONCE_TTL_SECONDS: int().pipe(z.number().positive()).default(600),

  /**
   * How long a sent settlement transaction may stay without a proven outcome before its workflow waits
   * in `needs_review` for an operator (still confirming; docs/security.md "Failure model").
   */
  SETTLE_PARK_AFTER_MS: int()
    .pipe(z.number().min(1_000))
    .default(15 * 60_000),
  /** How long POST /v1/settle waits for the workflow before answering `settlement_pending`. */
  SETTLE_WAIT_MS: int().pipe(z.number().min(100).max(300_000)).default(20_000),
  /**
   * How long a v2 settle request waits before 202. x402 SDK sellers read a 202 as a failed payment
   * and refuse the buyer while the payment still settles, so they get nearly all of @x402/core's
   * 90 s facilitator timeout (docs/decisions/settlement-pending-and-sdks.md).
   */
  SETTLE_WAIT_V2_MS: int().pipe(z.number().min(100).max(300_000)).default(80_000),
  /** An authorization must stay valid at least this long after verification (EIP-3009 validBefore). */
  MIN_VALIDITY_SECONDS: int().pipe(z.number().max(3600)).default(6),
  /** Upper bound on one receipt wait inside an activity; the activity retries after it. */
  RECEIPT_WAIT_MS: int().pipe(z.number().min(100)).default(30_000),
  /** A relayer transaction not mined this long after it was sent is replaced (same nonce, fees +12.5%). */
  RELAYER_REPLACE_AFTER_MS: int().pipe(z.number().min(100)).default(20_000),
  /** Workflow tasks and local activities one worker runs at once: its settlements in flight (src/temporal/worker-tuning.ts). */
  WORKER_TASK_SLOTS: int().pipe(z.number().min(2).max(2000)).default(256),

  /**
   * Keys by role (docs/security.md "Roles and keys"); only the worker holds keys. Devnet defaults:
   * every role is anvil account #1; production: all explicit and distinct.
   * The relayer signs settlements and pays gas on every EVM network the worker serves.
   */
  RELAYER_PRIVATE_KEY: hexKey.optional(),
  /** The relayer's address, for processes without its key (the API: gateway-wallet depositor). */
  RELAYER_ADDRESS: address.optional(),
  /** Worker: signs refunds from the revenue wallet (INFERENCE_REVENUE_WALLET). */
  REVENUE_WALLET_PRIVATE_KEY: hexKey.optional(),
  /** Worker: the top-up relayer (TOPUP_RELAYER_ADDRESS) that deposits into the merchant contract. */
  TOPUP_RELAYER_PRIVATE_KEY: hexKey.optional(),
  /**
   * Worker and top-up gateway: the deposit key contract (devnet/contracts/OnceDepositor.sol) through
   * which the top-up relayer calls the merchant's `deposit`, at most once per top-up. The merchant
   * allows it as its relayer; it allows the top-up relayer as its caller. Devnet default refused in
   * production.
   */
  TOPUP_DEPOSITOR_CONTRACT: address.default(DEVNET_DEPOSITOR_ADDRESS),
  /**
   * Withdrawal operators: wallets (comma list) whose organizations (the ones they signed in to
   * create) may see and move the facilitator's gateway-wallet balance. Nobody by default.
   */
  OPERATOR_ADDRESSES: z
    .string()
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    )
    .pipe(z.array(address))
    .default([]),
  /**
   * Settlement relayer lanes: comma-separated keys, one ordered nonce lane each (default: just
   * RELAYER_PRIVATE_KEY). Each must be an allowed relayer of the facilitator contracts. Effects tied
   * to one address (withdrawals, refunds, top-up deposits) always use RELAYER_PRIVATE_KEY.
   */
  RELAYER_PRIVATE_KEYS: z
    .string()
    .trim()
    .regex(/^0x[0-9a-fA-F]{64}(\s*,\s*0x[0-9a-fA-F]{64})*$/, 'must be comma-separated 0x-prefixed 32-byte hex private keys')
    .optional(),

  /** Where platform fees are paid; fees are 0 unless an organization sets platformFeeBps. */
  PLATFORM_FEE_RECIPIENT: address.optional(),
  /** Live (mainnet) settlement is off unless explicitly enabled. */
  MAINNETS_ENABLED: boolish.default(false),

  /**
   * Cross-chain EIP-3009: the bridge attestation service (Iris-style API) and the most of a payment
   * the bridge may keep. The attestation URL defaults to the devnet double outside production only.
   * Each source network's finality is `BRIDGE_FINALITY_<NET>` (standard | fast, default standard;
   * src/chains/networks.ts): a fast burn's maxFee is the fee read from the attestation service before
   * it (+10%, as Circle's client), and one over this bound burns at standard instead.
   */
  BRIDGE_ATTESTATION_URL: z.string().url().optional(),
  BRIDGE_MAX_FEE_BPS: int().pipe(z.number().max(10_000)).default(100),
  /**
   * Worker: where an abandoned bridge leg's message is delivered on its destination (the burned USDC
   * recovered, after the revenue wallet refunded its payer). Default: the revenue wallet's address.
   */
  BRIDGE_TREASURY_ADDRESS: address.optional(),
  /** Solana fee-payer secret key (base58 or JSON byte array); solana-devnet falls back to a devnet-only key. */
  SOLANA_FEE_PAYER_KEY: z
    .string()
    .regex(/^([1-9A-HJ-NP-Za-km-z]{80,90}|\[[\d,\s]+\])$/, 'must be a base58 or JSON-array Solana secret key')
    .optional(),
  /**
   * The most our Solana fee payer pays for one settlement (lamports): the signatures' base fee
   * (5,000 each) plus the priority fee the buyer's compute-budget instructions set (price x limit).
   * An x402 client's payment costs about 10,000 (two signatures, 1 micro-lamport per unit); anything
   * above the cap is refused before we sign.
   */
  SOLANA_MAX_FEE_LAMPORTS: int().pipe(z.number().min(5_000)).default(50_000),
  /** Batched nanopayments (docs/decisions/batched-payments-and-withdrawals.md): mainnets forward while on. */
  GATEWAY_MAINNET_ENABLED: boolish.default(true),
  /** Upstream batching gateway API for testnets: by default the devnet double that `npm start` runs. */
  GATEWAY_API_URL_TESTNET: z.string().url().default('http://127.0.0.1:4030'),
  /** Upstream batching gateway API for mainnets (the spec's default gateway API). */
  GATEWAY_API_URL: z.string().url().default('https://gateway-api.circle.com'),
  /** Bound on one upstream gateway call; past it the forward counts as failed (500 batched_*_error). */
  GATEWAY_TIMEOUT_MS: int().pipe(z.number().min(100).max(120_000)).default(10_000),
  /** Blocks polled by a withdrawal workflow: how long it sleeps between block-number checks. */
  WITHDRAWAL_POLL_MS: int().pipe(z.number().min(50).max(3_600_000)).default(5_000),

  /**
   * Operations (README "For operators"): a running x402 workflow older than this in a non-terminal
   * state is stuck (the worker's scheduled scan flags it and counts it for x402_stuck_payments).
   */
  STUCK_AFTER_SECONDS: int()
    .pipe(
      z
        .number()
        .min(1)
        .max(30 * 86_400),
    )
    .default(300),
  /** /healthz and x402_relayer_balance_ether: the relayer's gas balance (ether) below which a network is reported low. */
  RELAYER_MIN_BALANCE_ETHER: z
    .string()
    .trim()
    .regex(/^\d+(\.\d{1,18})?$/, 'must be a decimal amount of ether, e.g. 0.05')
    .default('0.01'),
});

/** Every variable the schema reads (the compose file's test checks the services pass only known ones). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(schema.shape);

export type Config = z.infer<typeof schema> & {
  publicUrl: string;
  env: Record<string, string | undefined>;
  /** NODE_ENV=production or MAINNETS_ENABLED: no devnet default applies (isProductionEnv). */
  production: boolean;
};

export class ConfigError extends Error {}

/** Parse `env`; throws ConfigError naming every bad variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  // An empty variable counts as unset, as in the network table's overrides.
  const set = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = schema.safeParse(set);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const c = result.data;
  const production = isProductionEnv(set);
  // Devnet only: every role is the devnet relayer unless set; the relayer's address follows its key
  // so a devnet stack that sets only RELAYER_PRIVATE_KEY stays consistent. Production derives nothing.
  const devnetRoles = production
    ? {}
    : {
        RELAYER_PRIVATE_KEY: c.RELAYER_PRIVATE_KEY ?? DEVNET_RELAYER_KEY,
        RELAYER_ADDRESS:
          c.RELAYER_ADDRESS ?? (c.RELAYER_PRIVATE_KEY ? privateKeyToAddress(c.RELAYER_PRIVATE_KEY as Hex) : DEVNET_RELAYER_ADDRESS),
      };
  const BRIDGE_ATTESTATION_URL = c.BRIDGE_ATTESTATION_URL ?? (production ? undefined : DEVNET_BRIDGE_ATTESTATION_URL);
  return { ...c, ...devnetRoles, BRIDGE_ATTESTATION_URL, production, publicUrl: c.PUBLIC_URL ?? `http://localhost:${c.PORT}`, env };
}
