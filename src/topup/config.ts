import { z } from 'zod';
import { ConfigError, DEVNET_RELAYER_ADDRESS } from '../config';
import { DEVNET_MERCHANT_ADDRESS } from '../chains/devnet-addresses';

/**
 * Configuration of the top-up gateway (its own env variables, validated like src/config.ts).
 * Defaults describe the devnet: one merchant, destination `base`, same-chain source `base`.
 */
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte hex address');
const int = () => z.string().trim().regex(/^\d+$/, 'must be a whole number').transform(Number).pipe(z.number().int());
const units = () => z.string().trim().regex(/^\d+$/, 'must be a whole number of base units').transform(BigInt);

export const TOPUP_SOURCE_IDS = ['base', 'optimism', 'ink', 'robinhood'] as const;
export type TopupSourceId = (typeof TOPUP_SOURCE_IDS)[number];

const schema = z.object({
  TOPUP_PORT: int().pipe(z.number().min(0).max(65535)).default(4022),
  /** Public origin of the gateway ({topup_url}); resources in challenges are built from it. */
  TOPUP_URL: z.string().url().optional(),
  TOPUP_MERCHANT_ID: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'lower-case letters, digits and dashes')
    .default('demo-merchant'),
  /** The merchant contract (MerchantBalances) on the destination chain. */
  TOPUP_MERCHANT_CONTRACT: address.default(DEVNET_MERCHANT_ADDRESS),
  /**
   * Sources offered in challenges and quotes, in this order: same-chain `base`; cross-chain
   * `optimism` and `ink` (bridged to Base by CCTP), each once its RPC, token and facilitator are
   * configured. `robinhood` is accepted but never eligible: its USDG cannot be bridged by CCTP.
   */
  TOPUP_SOURCES: z
    .string()
    .default('base')
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.enum(TOPUP_SOURCE_IDS)).min(1)),
  /**
   * The gateway relayer wallet on the destination chain: it receives settled funds (the settlement's
   * payout) and calls `deposit`. The worker signs as it with TOPUP_RELAYER_PRIVATE_KEY. The devnet
   * default (and TOPUP_MERCHANT_CONTRACT's) is refused in production (src/production.ts).
   */
  TOPUP_RELAYER_ADDRESS: address.default(DEVNET_RELAYER_ADDRESS),
  /** Internal organization id under which the gateway's settlements are recorded. */
  TOPUP_ORGANIZATION_ID: z.string().min(1).max(36).default('topup-gateway'),
  TOPUP_FEE_FIXED: units().default(0n),
  TOPUP_FEE_BPS: units().pipe(z.bigint().max(9_999n)).default(0n),
  TOPUP_FEE_RECIPIENT: address.optional(),
  TOPUP_MIN_AMOUNT: units().default(1n),
  TOPUP_MAX_AMOUNT: units().default(10_000_000_000n),
  /** Cross-chain: static bridge fee used when no live quote is available, and the buffer on any quote. */
  TOPUP_BRIDGE_FEE_FALLBACK: units().default(50_000n),
  TOPUP_BRIDGE_FEE_BUFFER_BPS: units().default(2_000n),
  /** Cross-chain: how long the bridge leg waits for its attestation before the top-up needs review. */
  TOPUP_BRIDGE_TIMEOUT_MS: int()
    .pipe(z.number().min(1_000))
    .default(6 * 3600_000),
  /** How long a paid request waits for its workflow before answering 503 + Retry-After. */
  TOPUP_WAIT_MS: int().pipe(z.number().min(100).max(300_000)).default(20_000),
  TOPUP_RETRY_AFTER_SECONDS: int().pipe(z.number().min(1)).default(5),
  TOPUP_MAX_TIMEOUT_SECONDS: int().pipe(z.number().min(30)).default(300),
  /** Ethereum gas protection: price of 1 ETH in USDC base units; unset means "unavailable". */
  TOPUP_ETH_PRICE_USDC: units().optional(),
});

/** Every TOPUP_* variable the gateway reads. */
export const TOPUP_VARIABLES: readonly string[] = Object.keys(schema.shape);

export type TopupConfig = z.infer<typeof schema> & { topupUrl: string };

export function loadTopupConfig(env: Record<string, string | undefined> = process.env): TopupConfig {
  const set = Object.fromEntries(Object.entries(env).filter(([k, v]) => k.startsWith('TOPUP_') && v !== undefined && v !== ''));
  const result = schema.safeParse(set);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const c = result.data;
  if ((c.TOPUP_FEE_FIXED > 0n || c.TOPUP_FEE_BPS > 0n) && !c.TOPUP_FEE_RECIPIENT) {
    throw new ConfigError('Invalid configuration:\n  TOPUP_FEE_RECIPIENT: required when a top-up fee is configured');
  }
  return { ...c, topupUrl: c.TOPUP_URL ?? `http://localhost:${c.TOPUP_PORT}` };
}
