import { z } from 'zod';
import { ConfigError, type Config } from '../config';
import { EVM_NETWORK_IDS, type EvmNetworkId } from '../chains/networks';

/**
 * Configuration of paid inference, read from the same environment as the rest of the service
 * (`config.env`), so it needs no edit of the shared config schema. Defaults describe the devnet:
 * the two provider doubles that `npm start` runs on 8600 and 8601 (devnet/inference-provider.ts).
 */

const providerSchema = z.object({
  /** Stable lowercase id; the public model id is `<id>:<upstream model id>`. */
  id: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/, 'provider id must be lowercase [a-z0-9_-]'),
  label: z.string().min(1).max(100),
  /** OpenAI-compatible base URL, ending in /v1 (GET {baseUrl}/models, POST {baseUrl}/chat/completions). */
  baseUrl: z.string().url(),
  /** Bearer key sent upstream; never logged or returned. */
  apiKey: z.string().min(1).optional(),
  /** How the provider's own chat is paid (spec descriptor `payment`): `none`, or `x402` per call. */
  payment: z.enum(['none', 'x402']).optional(),
  /** Where an x402-paid provider settles (spec descriptor `settlement`). */
  settlement: z
    .object({
      network: z.string().regex(/^eip155:[1-9][0-9]{0,19}$/, 'settlement.network must be CAIP-2 (eip155:<chain id>)'),
      asset: z.string().regex(/^0x[a-fA-F0-9]{40}$/, 'settlement.asset must be an address'),
      decimals: z.number().int().min(0).max(36),
    })
    .strict()
    .optional(),
  /** How a balance with the provider is funded through a top-up gateway (spec descriptor `topup`). */
  topup: z
    .object({ gatewayUrl: z.string().url(), merchant: z.string().min(1).max(100), settlementChainId: z.number().int().positive() })
    .strict()
    .optional(),
});
export type ProviderConfig = z.infer<typeof providerSchema>;

export const DEVNET_PROVIDERS: ProviderConfig[] = [
  { id: 'modelserver', label: 'Model server', baseUrl: 'http://127.0.0.1:8600/v1' },
  { id: 'modelserver2', label: 'Model server 2', baseUrl: 'http://127.0.0.1:8601/v1' },
];

const int = (min: number, max: number) =>
  z.string().regex(/^\d+$/, 'must be a whole number').transform(Number).pipe(z.number().int().min(min).max(max));

const schema = z.object({
  /** JSON array of providers: [{id, label, baseUrl, apiKey?, payment?, settlement?, topup?}]. */
  INFERENCE_PROVIDERS: z
    .string()
    .optional()
    .transform((s, ctx) => {
      if (!s) return DEVNET_PROVIDERS;
      try {
        return JSON.parse(s) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be a JSON array of {id, label, baseUrl, apiKey?}' });
        return z.NEVER;
      }
    })
    .pipe(z.array(providerSchema).min(1)),
  /** Where templates come from ({data: [{name, label, prompt?}]}); default: the first provider's /v1/templates. */
  INFERENCE_TEMPLATES_URL: z.string().url().optional(),
  INFERENCE_TEMPLATES_TTL_MS: int(0, 86_400_000).default(300_000),
  /** How long a provider's model list (and so its up/down status) is reused. */
  INFERENCE_MODELS_TTL_MS: int(0, 3_600_000).default(10_000),
  INFERENCE_DEFAULT_MODEL: z.string().min(1).default('modelserver:24B'),
  INFERENCE_DEFAULT_TEMPLATE: z.string().min(1).default('logical'),
  /** Price of one chat request in USDC base units (6 decimals). */
  INFERENCE_CHAT_PRICE: z
    .string()
    .regex(/^[1-9]\d{0,30}$/, 'must be a positive whole number of base units')
    .default('10000'),
  INFERENCE_CHAT_NETWORK: z.enum(EVM_NETWORK_IDS).default('base-sepolia'),
  /** maxTimeoutSeconds of the chat's payment requirements. */
  INFERENCE_PAYMENT_TIMEOUT_SECONDS: int(10, 3600).default(120),
  /** EIP-712 domain of the chat network's USDC, put in `extra` for the buyer to sign with. */
  INFERENCE_USDC_NAME: z.string().min(1).default('USDC'),
  INFERENCE_USDC_VERSION: z.string().min(1).default('2'),
  /**
   * Wallet the chat and media revenue is paid to (the worker signs refunds from it with
   * REVENUE_WALLET_PRIVATE_KEY). Devnet default: the relayer's address; required in production.
   */
  INFERENCE_REVENUE_WALLET: z
    .string()
    .regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte hex address')
    .optional(),
  /** Bound on the provider's first byte (and on probes: a fifth of it, at most 2 s). */
  INFERENCE_FIRST_BYTE_TIMEOUT_MS: int(100, 600_000).default(30_000),
  /**
   * A reply streaming longer than this is cut; refunded only when the provider held it longer than
   * the client (src/inference/chat-stream.ts relay), else `client_closed`.
   */
  INFERENCE_MAX_STREAM_MS: int(1000, 3_600_000).default(600_000),
  /** How long one write waits for the client to read: past it the client stalled the stream (`client_closed`, not refunded). */
  INFERENCE_WRITE_TIMEOUT_MS: int(100, 600_000).default(30_000),
  /**
   * When the charge guard looks at a charge: a charge still settling or charged by then was left
   * behind by an API process that died, and is refunded. Default: SETTLE_WAIT_MS + first-byte
   * timeout + max stream + write timeout + 1 minute.
   */
  INFERENCE_GUARD_DELAY_MS: int(1000, 86_400_000).optional(),
});

/** Every INFERENCE_* variable the API and worker read. */
export const INFERENCE_VARIABLES: readonly string[] = Object.keys(schema.shape);

export interface InferenceConfig {
  providers: ProviderConfig[];
  templatesUrl: string;
  templatesTtlMs: number;
  modelsTtlMs: number;
  defaultModel: string;
  defaultTemplate: string;
  price: string;
  network: EvmNetworkId;
  paymentTimeoutSeconds: number;
  usdcName: string;
  usdcVersion: string;
  revenueWallet: `0x${string}`;
  firstByteTimeoutMs: number;
  maxStreamMs: number;
  writeTimeoutMs: number;
  guardDelayMs: number;
}

const cache = new WeakMap<object, InferenceConfig>();

/** Parses (once per config object) the INFERENCE_* variables; throws ConfigError naming bad ones. */
export function inferenceConfig(
  config: Pick<Config, 'env'> & Partial<Pick<Config, 'SETTLE_WAIT_MS' | 'RELAYER_ADDRESS' | 'production'>>,
): InferenceConfig {
  const hit = cache.get(config);
  if (hit) return hit;
  const set = Object.fromEntries(Object.entries(config.env).filter(([k, v]) => k.startsWith('INFERENCE_') && v));
  const r = schema.safeParse(set);
  if (!r.success) {
    throw new ConfigError(`Invalid configuration:\n${r.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n')}`);
  }
  const c = r.data;
  const revenueWallet = c.INFERENCE_REVENUE_WALLET ?? (config.production ? undefined : config.RELAYER_ADDRESS);
  if (!revenueWallet)
    throw new ConfigError('Invalid configuration:\n  INFERENCE_REVENUE_WALLET: required in production (the revenue wallet address)');
  const ids = c.INFERENCE_PROVIDERS.map((p) => p.id);
  if (new Set(ids).size !== ids.length) throw new ConfigError('Invalid configuration:\n  INFERENCE_PROVIDERS: provider ids must be unique');
  const out: InferenceConfig = {
    providers: c.INFERENCE_PROVIDERS,
    templatesUrl: c.INFERENCE_TEMPLATES_URL ?? `${c.INFERENCE_PROVIDERS[0]!.baseUrl.replace(/\/$/, '')}/templates`,
    templatesTtlMs: c.INFERENCE_TEMPLATES_TTL_MS,
    modelsTtlMs: c.INFERENCE_MODELS_TTL_MS,
    defaultModel: c.INFERENCE_DEFAULT_MODEL,
    defaultTemplate: c.INFERENCE_DEFAULT_TEMPLATE,
    price: c.INFERENCE_CHAT_PRICE,
    network: c.INFERENCE_CHAT_NETWORK,
    paymentTimeoutSeconds: c.INFERENCE_PAYMENT_TIMEOUT_SECONDS,
    usdcName: c.INFERENCE_USDC_NAME,
    usdcVersion: c.INFERENCE_USDC_VERSION,
    revenueWallet: revenueWallet as `0x${string}`,
    firstByteTimeoutMs: c.INFERENCE_FIRST_BYTE_TIMEOUT_MS,
    maxStreamMs: c.INFERENCE_MAX_STREAM_MS,
    writeTimeoutMs: c.INFERENCE_WRITE_TIMEOUT_MS,
    guardDelayMs:
      c.INFERENCE_GUARD_DELAY_MS ??
      (config.SETTLE_WAIT_MS ?? 20_000) +
        c.INFERENCE_FIRST_BYTE_TIMEOUT_MS +
        c.INFERENCE_MAX_STREAM_MS +
        c.INFERENCE_WRITE_TIMEOUT_MS +
        60_000,
  };
  cache.set(config, out);
  return out;
}
