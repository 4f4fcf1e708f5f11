import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { attesterChainsFrom, startBridgeAttester, type BridgeAttester, type BridgeAttesterOptions } from '../../devnet/bridge-attester';

/** What the Jest global setup started, written to a file that every test file reads. */
export interface StackInfo {
  temporalAddress: string;
  workflowBundlePath: string;
  chains: Record<'base-sepolia' | 'optimism-sepolia', { rpcUrl: string; chainId: number }> & {
    /** `base` (8453): the top-up gateway's destination chain, with the merchant contract. */
    base: { rpcUrl: string; chainId: number };
    /** `optimism` (10): the top-up gateway's cross-chain source (bridged to `base`). */
    optimism: { rpcUrl: string; chainId: number };
  };
  usdc: `0x${string}`;
  facilitator: `0x${string}`;
  /** The bridge attestation double (devnet/bridge-attester.ts) over both chains. */
  bridgeAttestationUrl?: string;
  /** The litesvm-backed Solana devnet node (devnet/solana-rpc.ts), standing for solana-devnet. */
  solana: { rpcUrl: string };
  /** Devnet inference provider doubles: the INFERENCE_PROVIDERS value pointing at them, and the templates source. */
  inference: { providers: string; templatesUrl: string };
  /** Upstream batching gateway double (devnet/gateway-double.ts) and our GatewayWallet on both chains. */
  gatewayApiUrl: string;
  gatewayWallet: `0x${string}`;
  /** The media provider double (devnet/media-provider.ts): MEDIA_PROVIDER_URL. */
  mediaProviderUrl: string;
}

/** Per test run (several runs may share the machine); the global setup exports it to the tests. */
export const stackInfoPath = (pid = process.pid) => join(__dirname, '..', '..', '.data', `test-stack-${pid}.json`);
export const STACK_INFO_ENV = 'X402_TEST_STACK_INFO';

export function readStackInfo(): StackInfo {
  const path = process.env[STACK_INFO_ENV];
  if (!path) throw new Error(`${STACK_INFO_ENV} is not set: run the tests through jest (its global setup starts the stack)`);
  return JSON.parse(readFileSync(path, 'utf8')) as StackInfo;
}

/**
 * A test file's own bridge attester double over the stack's two testnet chains (base-sepolia and
 * optimism-sepolia), so it can withhold, re-key or re-price attestations without touching the stack's.
 */
export function startStackAttester(opts: Omit<BridgeAttesterOptions, 'chains'> = {}): Promise<BridgeAttester> {
  const { chains } = readStackInfo();
  return startBridgeAttester({
    ...opts,
    chains: attesterChainsFrom({
      RPC_URLS_BASE_SEPOLIA: chains['base-sepolia'].rpcUrl,
      RPC_URLS_OPTIMISM_SEPOLIA: chains['optimism-sepolia'].rpcUrl,
    }),
  });
}
