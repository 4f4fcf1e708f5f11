import { redactUrls } from '../observability/redact';
import { z } from 'zod';
import type { Address } from 'viem';
import { BRIDGE_FINALITIES, type BridgeFinality } from './evm/bridge';
import { ConfigError, isProductionEnv } from '../config';
import {
  DEVNET_BRIDGE_MESSENGER_ADDRESS,
  DEVNET_BRIDGE_TRANSMITTER_ADDRESS,
  X402_EXACT_PERMIT2_PROXY_ADDRESS,
  DEVNET_FACILITATOR_ADDRESS,
  DEVNET_GATEWAY_WALLET_ADDRESS,
  PERMIT2_CANONICAL_ADDRESS,
  X402_UPTO_PERMIT2_PROXY_ADDRESS,
  DEVNET_USDC_ADDRESS,
  DEVNET_WALLET_FACTORY_ADDRESS,
} from './devnet-addresses';

/**
 * The single source of truth for networks: ids, chain ids, CAIP-2, contract addresses, which routes
 * each network allows, and RPC URLs. Nothing else hard-codes these. Addresses and RPC URLs can be
 * overridden per network from the environment (see `buildNetworkTable`).
 */

export const EVM_NETWORK_IDS = [
  'base',
  'base-sepolia',
  'optimism',
  'optimism-sepolia',
  'arbitrum',
  'avalanche',
  'bsc',
  'bot-chain',
  'bot-chain-testnet',
  'arc-testnet',
  'polygon',
  'unichain',
  'ink',
  'worldchain',
  'sei',
  'hyperevm',
  'megaeth',
  'tempo',
  'monad',
  'robinhood',
  'fluent-testnet',
  'ethereum',
  'sonic',
] as const;
export const SOLANA_NETWORK_IDS = ['solana', 'solana-devnet'] as const;
export type EvmNetworkId = (typeof EVM_NETWORK_IDS)[number];
export type SolanaNetworkId = (typeof SOLANA_NETWORK_IDS)[number];
export type NetworkId = EvmNetworkId | SolanaNetworkId;

/** Which facilitator contract a network uses (spec: "Facilitator contract per network"). */
type FacilitatorGroup = 'testnet' | 'mainnet' | 'fluent' | 'none';

interface StaticNetwork {
  chainId?: number;
  testnet: boolean;
  facilitator: FacilitatorGroup;
  /** Upstream batching-gateway domain, when the gateway supports the network (spec's batching table). */
  gatewayDomain?: number;
  /**
   * Circle's CCTP domain, when CCTP serves the chain (Circle's "Supported blockchains and domains").
   * The same number as the gateway domain where both exist; `ink` has one (21) without the gateway.
   */
  cctpDomain?: number;
  /** The network's dollar token for EIP-3009 payments when it is not USDC (spec: `robinhood` uses USDG). */
  stablecoin?: 'USDG';
  /** Takes Permit2 payments only (no EIP-3009 token on that chain). */
  permit2Only?: boolean;
  /** Cross-chain destinations are refused (spec: Avalanche, Sei, Arc testnet are same-chain only). */
  sameChainOnly?: boolean;
  /** Listed for POST /v1/permit only. */
  permitOnly?: boolean;
  usdc?: Address;
  /** The token on the devnet chain that `npm start` runs (devnet mode only; production uses `usdc`). */
  devnetUsdc?: Address;
  /** Default RPC URLs: the devnet anvil chains that `npm start` runs. */
  rpcUrls?: string[];
  /** Blocks that must follow a transaction's block before its receipt counts (see CONFIRMATION_DEPTH). */
  confirmationDepth?: number;
}

/**
 * Confirmation depths by how each chain orders and finalizes blocks: the blocks that must follow a
 * transaction's block before the relayer reports it (a reorg within them is noticed and the recorded
 * bytes are sent again). `CONFIRMATION_DEPTH_<NET>` overrides; devnet chains (anvil, not production)
 * default to 0.
 * - 0, single-sequencer rollups (OP Stack: base, optimism, unichain, ink, worldchain; Arbitrum:
 *   arbitrum, robinhood): a block the sequencer has published is not reorged short of a sequencer
 *   failure; and chains with single-slot BFT finality (avalanche, sei, hyperevm, sonic, arc-testnet).
 * - 2, BSC (fast finality after two blocks) and chains we have no finality facts for (the default).
 * - 3, Ethereum (one-block reorgs happen; deeper ones are rare before finality).
 * - 5, Polygon PoS (reorgs of a few blocks were common before its milestones).
 */
const CONFIRMATION_DEPTH = { rollup: 0, bft: 0, unknown: 2, bsc: 2, ethereum: 3, polygon: 5 } as const;

/*
 * Public facts, each with its sources (test/unit/network-facts.test.ts checks every fact against the
 * packages that ship it, at their pinned versions):
 * - [spec]: the spec's "Batching gateway network table" (CAIP-2 chain id, gateway domain = CCTP domain).
 * - [viem]: viem/chains, the chain's `id`.
 * - [circle]: Circle's own chain definitions, @circle-fin/bridge-kit/chains (`chainId`, `usdcAddress`,
 *   `cctp.domain`): the addresses of Circle's USDC list (developers.circle.com/stablecoins/usdc-contract-addresses)
 *   and the domains of its CCTP table (developers.circle.com/cctp/concepts/supported-chains-and-domains).
 * - [x402]: the x402 SDK's default USDC per chain, @x402/evm `DEFAULT_ASSETS`.
 * A fact no source confirms is absent, never guessed: the operator supplies it (`CHAIN_ID_<NET>`,
 * `USDC_ADDRESS_<NET>`) and start-up names what is missing (`missingFacts`). Absent now: the chain ids
 * of bot-chain and bot-chain-testnet (no package or issuer page names those chains); the token of
 * bot-chain, bot-chain-testnet, bsc, megaeth and tempo (Permit2-only chains where Circle issues no USDC;
 * @x402/evm lists MegaUSD, 18 decimals, on megaeth, not USDC) and of fluent-testnet (permit-only: the
 * request names its token).
 */
const TABLE: Record<EvmNetworkId, StaticNetwork> = {
  'base-sepolia': {
    chainId: 84532, // [spec] [viem] [circle]
    confirmationDepth: CONFIRMATION_DEPTH.rollup,
    testnet: true,
    facilitator: 'testnet',
    gatewayDomain: 6, // [spec]
    cctpDomain: 6, // [spec] [circle]
    usdc: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', // [circle] [x402] (Circle's testnet USDC)
    devnetUsdc: DEVNET_USDC_ADDRESS,
    rpcUrls: ['http://127.0.0.1:8545'],
  },
  'optimism-sepolia': {
    chainId: 11155420, // [spec] [viem] [circle]
    confirmationDepth: CONFIRMATION_DEPTH.rollup,
    testnet: true,
    facilitator: 'testnet',
    gatewayDomain: 2, // [spec]
    cctpDomain: 2, // [spec] [circle]
    usdc: '0x5fd84259d66Cd46123540766Be93DFE6D43130D7', // [circle] (Circle's testnet USDC)
    devnetUsdc: DEVNET_USDC_ADDRESS,
    rpcUrls: ['http://127.0.0.1:8546'],
  },
  'arc-testnet': {
    chainId: 5042002, // [spec] [viem] [circle]
    confirmationDepth: CONFIRMATION_DEPTH.bft,
    testnet: true,
    facilitator: 'testnet',
    gatewayDomain: 26, // [spec]
    cctpDomain: 26, // [spec] [circle]
    sameChainOnly: true,
    usdc: '0x3600000000000000000000000000000000000000', // [circle] (the ERC-20 interface of Arc's native USDC)
  },
  // No public facts confirmed: chain id and token come from CHAIN_ID_/USDC_ADDRESS_BOT_CHAIN_TESTNET.
  'bot-chain-testnet': { testnet: true, facilitator: 'testnet', permit2Only: true },
  'fluent-testnet': { chainId: 20994 /* [spec] [viem] */, testnet: true, facilitator: 'fluent', permitOnly: true },
  base: {
    chainId: 8453, // [spec] [viem] [circle]
    confirmationDepth: CONFIRMATION_DEPTH.rollup,
    testnet: false,
    facilitator: 'mainnet',
    gatewayDomain: 6, // [spec]
    cctpDomain: 6, // [spec] [circle]
    usdc: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', // [circle] [x402]
  },
  optimism: {
    chainId: 10, // [spec] [viem] [circle]
    confirmationDepth: CONFIRMATION_DEPTH.rollup,
    testnet: false,
    facilitator: 'mainnet',
    gatewayDomain: 2, // [spec]
    cctpDomain: 2, // [spec] [circle]
    usdc: '0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85', // [circle]
  },
  arbitrum: {
    chainId: 42161, // [spec] [viem] [circle]
    confirmationDepth: CONFIRMATION_DEPTH.rollup,
    testnet: false,
    facilitator: 'mainnet',
    gatewayDomain: 3, // [spec]
    cctpDomain: 3, // [spec] [circle]
    usdc: '0xaf88d065e77c8cC2239327C5EDb3A432268e5831', // [circle] [x402]
  },
  avalanche: {
    chainId: 43114, // [spec] [viem] [circle]
    confirmationDepth: CONFIRMATION_DEPTH.bft,
    testnet: false,
    facilitator: 'mainnet',
    gatewayDomain: 1, // [spec]
    cctpDomain: 1, // [spec] [circle]
    sameChainOnly: true,
    usdc: '0xB97EF9Ef8734C71904D8002F8b6Bc66Dd9c48a6E', // [circle] [x402]
  },
  polygon: {
    chainId: 137, // [spec] [viem] [circle]
    confirmationDepth: CONFIRMATION_DEPTH.polygon,
    testnet: false,
    facilitator: 'mainnet',
    gatewayDomain: 7, // [spec]
    cctpDomain: 7, // [spec] [circle]
    usdc: '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359', // [circle] [x402]
  },
  unichain: {
    chainId: 130, // [spec] [viem] [circle]
    confirmationDepth: CONFIRMATION_DEPTH.rollup,
    testnet: false,
    facilitator: 'mainnet',
    gatewayDomain: 10, // [spec]
    cctpDomain: 10, // [spec] [circle]
    usdc: '0x078D782b760474a361dDA0AF3839290b0EF57AD6', // [circle]
  },
  ink: {
    chainId: 57073, // [spec] [viem] [circle]
    confirmationDepth: CONFIRMATION_DEPTH.rollup,
    testnet: false,
    facilitator: 'mainnet',
    cctpDomain: 21, // [circle] (the spec's gateway table has none for ink)
    usdc: '0x2D270e6886d130D724215A266106e6832161EAEd', // [circle]
  },
  worldchain: {
    chainId: 480, // [spec] [viem] [circle]
    confirmationDepth: CONFIRMATION_DEPTH.rollup,
    testnet: false,
    facilitator: 'mainnet',
    gatewayDomain: 14, // [spec]
    cctpDomain: 14, // [spec] [circle]
    usdc: '0x79A02482A880bCE3F13e09Da970dC34db4CD24d1', // [circle]
  },
  sei: {
    chainId: 1329, // [spec] [viem] [circle]
    confirmationDepth: CONFIRMATION_DEPTH.bft,
    testnet: false,
    facilitator: 'mainnet',
    gatewayDomain: 16, // [spec]
    cctpDomain: 16, // [spec] [circle]
    sameChainOnly: true,
    usdc: '0xe15fC38F6D8c56aF07bbCBe3BAf5708A2Bf42392', // [circle] [x402]
  },
  hyperevm: {
    chainId: 999, // [spec] [viem] [circle]
    confirmationDepth: CONFIRMATION_DEPTH.bft,
    testnet: false,
    facilitator: 'mainnet',
    gatewayDomain: 19, // [spec]
    cctpDomain: 19, // [spec] [circle]
    usdc: '0xb88339CB7199b77E23DB6E890353E22632Ba630f', // [circle]
  },
  megaeth: { chainId: 4326 /* [spec] [viem] */, testnet: false, facilitator: 'mainnet', permit2Only: true },
  bsc: {
    chainId: 56 /* [spec] [viem] */,
    confirmationDepth: CONFIRMATION_DEPTH.bsc,
    testnet: false,
    facilitator: 'mainnet',
    permit2Only: true,
  },
  // No public facts confirmed: chain id and token come from CHAIN_ID_/USDC_ADDRESS_BOT_CHAIN.
  'bot-chain': { testnet: false, facilitator: 'mainnet', permit2Only: true },
  tempo: { chainId: 4217 /* [viem] (Tempo Mainnet) */, testnet: false, facilitator: 'mainnet', permit2Only: true },
  monad: {
    chainId: 143, // [viem] [circle]
    testnet: false,
    facilitator: 'mainnet',
    cctpDomain: 15, // [circle]
    usdc: '0x754704Bc059F8C67012fEd69BC8A327a5aafb603', // [circle] [x402]
  },
  robinhood: {
    chainId: 4663, // [viem] (Robinhood Chain)
    confirmationDepth: CONFIRMATION_DEPTH.rollup,
    testnet: false,
    facilitator: 'mainnet',
    stablecoin: 'USDG',
    usdc: '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168', // USDG: Robinhood's token list, docs.robinhood.com/chain/contracts (no package ships it)
  },
  ethereum: {
    chainId: 1, // [spec] [viem] [circle]
    confirmationDepth: CONFIRMATION_DEPTH.ethereum,
    testnet: false,
    facilitator: 'none',
    gatewayDomain: 0, // [spec]
    cctpDomain: 0, // [spec] [circle]
    usdc: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48', // [circle] [x402]
  },
  sonic: {
    chainId: 146, // [spec] [viem] [circle]
    confirmationDepth: CONFIRMATION_DEPTH.bft,
    testnet: false,
    facilitator: 'none',
    gatewayDomain: 13, // [spec]
    cctpDomain: 13, // [spec] [circle]
    usdc: '0x29219dd400f2Bf60E5a23d13Be72B486D4038894', // [circle]
  },
};

export interface EvmNetwork {
  id: EvmNetworkId;
  kind: 'evm';
  chainId: number | undefined;
  caip2: string | undefined;
  testnet: boolean;
  facilitator: Address | undefined;
  usdc: Address | undefined;
  /** Permit2 and the x402 exact/upto Permit2 proxies: one address each on every chain (spec). */
  permit2: Address;
  exactPermit2Proxy: Address;
  uptoPermit2Proxy: Address;
  gatewayDomain: number | undefined;
  /** CCTP domain of the chain (cross-chain EIP-3009 and top-ups), when CCTP serves it. */
  cctpDomain: number | undefined;
  /** The token `usdc` names: USDC, or USDG on `robinhood` (CCTP carries USDC only). */
  stablecoin: 'USDC' | 'USDG';
  /** CCTP-style bridge pair (cross-chain EIP-3009); the domain is `cctpDomain`. */
  bridgeMessenger: Address | undefined;
  bridgeTransmitter: Address | undefined;
  /**
   * Finality of the burns whose source is this network (`BRIDGE_FINALITY_<NET>`, default standard):
   * `fast` reads the fast fee from the attestation service before each burn (docs/decisions/fast-finality.md).
   */
  bridgeFinality: BridgeFinality;
  /** Gateway wallet of batched payments: one address for testnets, one for mainnets (spec). */
  gatewayWallet: Address;
  permit2Only: boolean;
  sameChainOnly: boolean;
  permitOnly: boolean;
  rpcUrls: string[];
  /** The smallest payment we pay gas to settle (atomic units; `MIN_SETTLE_AMOUNT_<NET>`). */
  minSettleAmount: bigint;
  /**
   * The most the relayer ever offers per gas (wei; `MAX_FEE_PER_GAS_<NET>`): new transactions and
   * replacement bumps stop there, and a transaction at the ceiling waits for an operator.
   */
  maxFeePerGas: bigint;
  /** Blocks that must follow a transaction's block before its receipt counts (`CONFIRMATION_DEPTH_<NET>`). */
  confirmationDepth: number;
  /**
   * The longest pause our RPC client takes when a provider answers 429 or 503 with `Retry-After`
   * (ms; `RPC_RETRY_AFTER_MAX_MS`, default DEFAULT_RPC_RETRY_AFTER_MAX_MS). A longer `Retry-After` is
   * cut to it (whole seconds; under 1 s viem's own back-off, 50 then 100 ms, applies): a receipt
   * wait goes on asking at this pace through a rate-limited period, and notices the receipt within
   * about this long after it ends.
   */
  rpcRetryAfterMaxMs: number;
  /**
   * The only factories a buyer's counterfactual (EIP-6492) wallet may be deployed through before its
   * settlement, at our relayer's cost (`SMART_WALLET_FACTORIES_<NET>`, comma-separated; devnet default:
   * the devnet's factory; production: none).
   */
  walletFactories: Address[];
  /** Settlement works here: chain id, RPC, facilitator and USDC (not needed on permit-only networks) are all known. */
  enabled: boolean;
}

export type NetworkTable = ReadonlyMap<EvmNetworkId, EvmNetwork>;

/** Environment variable suffix of a network id: `base-sepolia` -> `BASE_SEPOLIA`. */
export const envSuffix = (id: string) => id.toUpperCase().replace(/-/g, '_');

const addressSchema = z.string().regex(/^0x[0-9a-fA-F]{40}$/);
const urlList = z.array(z.string().url()).min(1);

function readEnv<T>(env: Record<string, string | undefined>, name: string, parse: (raw: string) => T): T | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  try {
    return parse(raw);
  } catch {
    throw new ConfigError(`Invalid configuration:\n  ${name}: ${JSON.stringify(redactUrls(raw))} is not valid`);
  }
}

/**
 * Gas griefing: anyone with a free key could make us pay gas for 1-unit payments. Mainnets refuse
 * less than 0.001 USDC (6 decimals on every network we settle) unless `MIN_SETTLE_AMOUNT_<NET>` says
 * otherwise; testnets refuse only zero.
 */
export const DEFAULT_MIN_SETTLE_AMOUNT = { mainnet: 1000n, testnet: 1n } as const;

function minSettleAmount(env: Record<string, string | undefined>, id: string, testnet: boolean): bigint {
  const configured = readEnv(env, `MIN_SETTLE_AMOUNT_${envSuffix(id)}`, (v) =>
    BigInt(
      z
        .string()
        .regex(/^\d{1,30}$/)
        .parse(v),
    ),
  );
  return configured ?? DEFAULT_MIN_SETTLE_AMOUNT[testnet ? 'testnet' : 'mainnet'];
}

/**
 * `RPC_RETRY_AFTER_MAX_MS`'s default. A relayer waiting through a provider's 429s asks about once
 * per this pause (one shared head poll and the receipt lookups; viem retries each call twice) and
 * notices the receipt within about it once the 429s end. Measured with the RPC provider double in
 * front of anvil (1 s blocks, Retry-After 30, 20 s of 429s): uncapped the receipt was noticed
 * ~10-30 s late at 0.1 calls/s; at 1 s, 70-260 ms late at ~1.1 calls/s, which a rate-limited
 * provider takes (docs/decisions/reverted-refunds-and-retry-after.md).
 */
export const DEFAULT_RPC_RETRY_AFTER_MAX_MS = 2_000;

const GWEI = 1_000_000_000n;

/**
 * The fee ceiling's default (wei per gas), far above the usual fees and below what a fee spike or a
 * runaway bump would reach: Ethereum's base fee has spiked past 200 gwei, Polygon's gas price is
 * counted in POL and has spiked past 1,000 gwei, and the L2s and other chains settle well under 1 gwei
 * (BSC and Avalanche at a few gwei). `MAX_FEE_PER_GAS_<NET>` overrides it.
 */
export const DEFAULT_MAX_FEE_PER_GAS: Partial<Record<EvmNetworkId, bigint>> & { other: bigint } = {
  ethereum: 500n * GWEI,
  polygon: 5_000n * GWEI,
  other: 100n * GWEI,
};

function maxFeePerGas(env: Record<string, string | undefined>, id: EvmNetworkId): bigint {
  const configured = readEnv(env, `MAX_FEE_PER_GAS_${envSuffix(id)}`, (v) =>
    BigInt(
      z
        .string()
        .regex(/^[1-9]\d{0,30}$/)
        .parse(v),
    ),
  );
  return configured ?? DEFAULT_MAX_FEE_PER_GAS[id] ?? DEFAULT_MAX_FEE_PER_GAS.other;
}

/**
 * Builds the network table with env overrides:
 * `RPC_URLS_<NET>` (comma-separated; `none` disables the default), `USDC_ADDRESS_<NET>`, `CHAIN_ID_<NET>`, `MIN_SETTLE_AMOUNT_<NET>`,
 * `MAX_FEE_PER_GAS_<NET>` (wei), `CONFIRMATION_DEPTH_<NET>`, `SMART_WALLET_FACTORIES_<NET>`, `BRIDGE_FINALITY_<NET>` (standard | fast),
 * `FACILITATOR_ADDRESS_TESTNET`, `FACILITATOR_ADDRESS_MAINNET`, `FACILITATOR_ADDRESS_FLUENT`,
 * `PERMIT2_ADDRESS`, `EXACT_PERMIT2_PROXY_ADDRESS`, `UPTO_PERMIT2_PROXY_ADDRESS`,
 * `BRIDGE_MESSENGER_ADDRESS`, `BRIDGE_TRANSMITTER_ADDRESS` (defaults: devnet),
 * `GATEWAY_WALLET_TESTNET` (default: devnet), `GATEWAY_WALLET_MAINNET` (default: Circle's mainnet GatewayWallet).
 * In production mode (isProductionEnv) no network has a default RPC URL and the bridge pair has no
 * default, so nothing devnet is enabled implicitly; src/production.ts refuses any devnet address left.
 */
export function buildNetworkTable(env: Record<string, string | undefined> = process.env): NetworkTable {
  const devnet = !isProductionEnv(env);
  const addr = (name: string) => readEnv(env, name, (v) => addressSchema.parse(v) as Address);
  const facilitators: Record<FacilitatorGroup, Address | undefined> = {
    testnet: addr('FACILITATOR_ADDRESS_TESTNET') ?? DEVNET_FACILITATOR_ADDRESS,
    mainnet: addr('FACILITATOR_ADDRESS_MAINNET'),
    fluent: addr('FACILITATOR_ADDRESS_FLUENT'),
    none: undefined,
  };
  const permit2 = {
    permit2: addr('PERMIT2_ADDRESS') ?? PERMIT2_CANONICAL_ADDRESS,
    exactPermit2Proxy: addr('EXACT_PERMIT2_PROXY_ADDRESS') ?? X402_EXACT_PERMIT2_PROXY_ADDRESS,
    uptoPermit2Proxy: addr('UPTO_PERMIT2_PROXY_ADDRESS') ?? X402_UPTO_PERMIT2_PROXY_ADDRESS,
  };
  const bridge = {
    bridgeMessenger: addr('BRIDGE_MESSENGER_ADDRESS') ?? (devnet ? DEVNET_BRIDGE_MESSENGER_ADDRESS : undefined),
    bridgeTransmitter: addr('BRIDGE_TRANSMITTER_ADDRESS') ?? (devnet ? DEVNET_BRIDGE_TRANSMITTER_ADDRESS : undefined),
  };
  const gatewayWallets = {
    testnet: addr('GATEWAY_WALLET_TESTNET') ?? DEVNET_GATEWAY_WALLET_ADDRESS,
    mainnet: addr('GATEWAY_WALLET_MAINNET') ?? ('0x77777777Dcc4d5A8B6E418Fd04D8997ef11000eE' as Address),
  };
  const table = new Map<EvmNetworkId, EvmNetwork>();
  for (const id of EVM_NETWORK_IDS) {
    const s = TABLE[id];
    const sfx = envSuffix(id);
    const rpcRaw = env[`RPC_URLS_${sfx}`];
    const rpcUrls =
      rpcRaw === 'none'
        ? []
        : (readEnv(env, `RPC_URLS_${sfx}`, (v) => urlList.parse(v.split(',').map((u) => u.trim()))) ??
          (devnet ? s.rpcUrls : undefined) ??
          []);
    const chainId =
      readEnv(env, `CHAIN_ID_${sfx}`, (v) =>
        z
          .string()
          .regex(/^[1-9]\d*$/)
          .transform(Number)
          .parse(v),
      ) ?? s.chainId;
    const usdc = addr(`USDC_ADDRESS_${sfx}`) ?? (devnet ? (s.devnetUsdc ?? s.usdc) : s.usdc);
    const facilitator = facilitators[s.facilitator];
    table.set(id, {
      id,
      kind: 'evm',
      chainId,
      caip2: chainId === undefined ? undefined : `eip155:${chainId}`,
      testnet: s.testnet,
      facilitator,
      usdc,
      ...permit2,
      gatewayDomain: s.gatewayDomain,
      cctpDomain: s.cctpDomain,
      stablecoin: s.stablecoin ?? 'USDC',
      ...bridge,
      bridgeFinality: readEnv(env, `BRIDGE_FINALITY_${sfx}`, (v) => z.enum(BRIDGE_FINALITIES).parse(v)) ?? 'standard',
      gatewayWallet: s.testnet ? gatewayWallets.testnet : gatewayWallets.mainnet,
      permit2Only: s.permit2Only ?? false,
      sameChainOnly: s.sameChainOnly ?? false,
      permitOnly: s.permitOnly ?? false,
      rpcUrls,
      walletFactories:
        readEnv(
          env,
          `SMART_WALLET_FACTORIES_${sfx}`,
          (v) => z.array(addressSchema).parse(v.split(',').map((a) => a.trim())) as Address[],
        ) ?? (devnet ? [DEVNET_WALLET_FACTORY_ADDRESS] : []),
      minSettleAmount: minSettleAmount(env, id, s.testnet),
      maxFeePerGas: maxFeePerGas(env, id),
      rpcRetryAfterMaxMs:
        readEnv(env, 'RPC_RETRY_AFTER_MAX_MS', (v) =>
          z
            .string()
            .regex(/^\d{1,7}$/)
            .transform(Number)
            .parse(v),
        ) ?? DEFAULT_RPC_RETRY_AFTER_MAX_MS,
      confirmationDepth:
        readEnv(env, `CONFIRMATION_DEPTH_${sfx}`, (v) =>
          z
            .string()
            .regex(/^\d{1,3}$/)
            .transform(Number)
            .parse(v),
        ) ?? (devnet ? 0 : (s.confirmationDepth ?? CONFIRMATION_DEPTH.unknown)),
      // Settlement needs the token too: without USDC every exact/upto payment would fail, so /v1/supported
      // must not list it (the permit endpoint names its token per request).
      enabled: chainId !== undefined && rpcUrls.length > 0 && facilitator !== undefined && (usdc !== undefined || (s.permitOnly ?? false)),
    });
  }
  return table;
}

/**
 * Why a network that has RPC URLs is still not enabled, as one line naming it and the variables to
 * set (undefined when it is enabled or has no RPC URL). Start-up logs it: a chain id or token address
 * we do not ship must come from the operator, and a network left off silently would look supported.
 */
export function missingFacts(n: EvmNetwork): string | undefined {
  if (n.enabled || n.rpcUrls.length === 0) return undefined;
  const group = TABLE[n.id].facilitator;
  if (group === 'none') return `${n.id} has RPC URLs but is not enabled: the spec names no facilitator contract for it`;
  const sfx = envSuffix(n.id);
  const missing = [
    n.chainId === undefined && `CHAIN_ID_${sfx} (its chain id is not shipped)`,
    n.usdc === undefined && !n.permitOnly && `USDC_ADDRESS_${sfx} (its ${n.stablecoin} address is not shipped)`,
    n.facilitator === undefined && `FACILITATOR_ADDRESS_${group.toUpperCase()}`,
  ].filter((m): m is string => typeof m === 'string');
  return `${n.id} has RPC URLs but is not enabled: set ${missing.join(', ')}`;
}

/**
 * The tokens we call on a network: its USDC (USDG on `robinhood`), the only token the table lists.
 * Every route that makes the relayer call a token (EIP-3009, Permit2, /v1/permit, top-up) refuses any
 * other before a read or a transaction: a token's own code runs inside transactions we pay for, so
 * an attacker's token could burn the relayer's gas (docs/security.md, "Gas griefing").
 */
export const listedTokens = (network: Pick<EvmNetwork, 'usdc'>): Address[] => (network.usdc ? [network.usdc] : []);

/** Whether `address` (any spelling) is one of the network's listed tokens. */
export const isListedToken = (network: Pick<EvmNetwork, 'usdc'>, address: string): boolean =>
  listedTokens(network).some((t) => t.toLowerCase() === address.toLowerCase());

/**
 * The contracts a network uses, each with the variable that configures it (start-up checks:
 * no devnet address in production, code at every address).
 */
export function contractVariables(n: EvmNetwork): { variable: string; address: Address }[] {
  const group = TABLE[n.id].facilitator;
  const out: { variable: string; address: Address | undefined }[] = [
    { variable: `FACILITATOR_ADDRESS_${group.toUpperCase()}`, address: n.facilitator },
    { variable: `USDC_ADDRESS_${envSuffix(n.id)}`, address: n.usdc },
    { variable: 'PERMIT2_ADDRESS', address: n.permit2 },
    { variable: 'EXACT_PERMIT2_PROXY_ADDRESS', address: n.exactPermit2Proxy },
    { variable: 'UPTO_PERMIT2_PROXY_ADDRESS', address: n.uptoPermit2Proxy },
    { variable: 'BRIDGE_MESSENGER_ADDRESS', address: n.bridgeMessenger },
    { variable: 'BRIDGE_TRANSMITTER_ADDRESS', address: n.bridgeTransmitter },
    ...n.walletFactories.map((address) => ({ variable: `SMART_WALLET_FACTORIES_${envSuffix(n.id)}`, address })),
    // The gateway wallet exists only where the upstream gateway serves the network.
    {
      variable: n.testnet ? 'GATEWAY_WALLET_TESTNET' : 'GATEWAY_WALLET_MAINNET',
      address: n.gatewayDomain === undefined ? undefined : n.gatewayWallet,
    },
  ];
  return out.filter((c): c is { variable: string; address: Address } => c.address !== undefined);
}

export const isEvmNetworkId = (v: string): v is EvmNetworkId => (EVM_NETWORK_IDS as readonly string[]).includes(v);
export const isSolanaNetworkId = (v: string): v is SolanaNetworkId => (SOLANA_NETWORK_IDS as readonly string[]).includes(v);

// ---------------------------------------------------------------------------------------------
// Solana (routing step 1; docs/decisions/solana-settlement.md). `payTo` is the seller's wallet
// (owner) and `asset` the SPL mint; the service is fee payer (src/chains/solana/fee-payer.ts).

export interface SolanaNetwork {
  id: SolanaNetworkId;
  kind: 'solana';
  /** CAIP-2 id (genesis hash prefix). */
  caip2: string;
  testnet: boolean;
  /** USDC mint (base58). */
  usdc: string;
  /** JSON-RPC URL; undefined disables the network. */
  rpcUrl: string | undefined;
  /** The smallest payment we pay the fee to settle (atomic units; `MIN_SETTLE_AMOUNT_<NET>`). */
  minSettleAmount: bigint;
  enabled: boolean;
}

const SOLANA_TABLE: Record<SolanaNetworkId, { caip2: string; testnet: boolean; usdc: string; rpcUrl?: string }> = {
  // Default RPC: the litesvm-backed devnet node that `npm start` runs (devnet/solana-rpc.ts).
  'solana-devnet': {
    caip2: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
    testnet: true,
    usdc: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU',
    rpcUrl: 'http://127.0.0.1:8899',
  },
  solana: { caip2: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', testnet: false, usdc: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v' },
};

const base58Schema = z.string().regex(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);

/** Solana networks with env overrides `SOLANA_RPC_URL_<NET>` (`none` disables) and `USDC_MINT_<NET>`. */
export function buildSolanaNetworkTable(
  env: Record<string, string | undefined> = process.env,
): ReadonlyMap<SolanaNetworkId, SolanaNetwork> {
  const table = new Map<SolanaNetworkId, SolanaNetwork>();
  for (const id of SOLANA_NETWORK_IDS) {
    const s = SOLANA_TABLE[id];
    const sfx = envSuffix(id);
    const rawUrl = env[`SOLANA_RPC_URL_${sfx}`];
    // The default RPC is the devnet node of `npm start`: never in production mode.
    const rpcUrl =
      rawUrl === 'none'
        ? undefined
        : (readEnv(env, `SOLANA_RPC_URL_${sfx}`, (v) => z.string().url().parse(v)) ?? (isProductionEnv(env) ? undefined : s.rpcUrl));
    const usdc = readEnv(env, `USDC_MINT_${sfx}`, (v) => base58Schema.parse(v)) ?? s.usdc;
    const minimum = minSettleAmount(env, id, s.testnet);
    table.set(id, {
      id,
      kind: 'solana',
      caip2: s.caip2,
      testnet: s.testnet,
      usdc,
      rpcUrl,
      minSettleAmount: minimum,
      enabled: rpcUrl !== undefined,
    });
  }
  return table;
}
