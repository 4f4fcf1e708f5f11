import type { Address } from 'viem';
import { privateKeyToAddress } from 'viem/accounts';
import { DEVNET_RELAYER_KEY } from '../src/config';
import { DEVNET_FACILITATOR_ADDRESS, DEVNET_USDC_ADDRESS } from '../src/chains/devnet-addresses';
import type { EvmNetwork } from '../src/chains/networks';
import { loadTopupConfig } from '../src/topup/config';
import { TOPUP_DESTINATION_NETWORK } from '../src/topup/types';
import { deployTopupDevnet } from './deploy-topup';

/** Default RPC port of the devnet `base` chain (8453), the top-up gateway's destination. */
export const DEVNET_BASE_RPC_URL = 'http://127.0.0.1:8547';
/** Default RPC port of the devnet `optimism` chain (10), the gateway's cross-chain source. */
export const DEVNET_OPTIMISM_RPC_URL = 'http://127.0.0.1:8548';

/**
 * The variables that make local anvils stand for `base` (8453) and `optimism` (10): RPC URLs and our
 * devnet USDC and facilitator addresses (the bridge pair has devnet defaults already).
 */
export function mainnetDevnetEnv(baseRpcUrl: string, optimismRpcUrl: string): Record<string, string> {
  return {
    RPC_URLS_BASE: baseRpcUrl,
    RPC_URLS_OPTIMISM: optimismRpcUrl,
    FACILITATOR_ADDRESS_MAINNET: DEVNET_FACILITATOR_ADDRESS,
    USDC_ADDRESS_BASE: DEVNET_USDC_ADDRESS,
    USDC_ADDRESS_OPTIMISM: DEVNET_USDC_ADDRESS,
  };
}

/**
 * `npm start` additions for the top-up gateway: the devnet `base` chain (chain id 8453, so real x402
 * clients sign for `base`) and the devnet `optimism` chain (10, the cross-chain source) with our
 * contracts and bridge pair at the devnet addresses. Only variables the user did not set are filled in.
 */
export function topupDevnetEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const defaults: Record<string, string> = {
    ...mainnetDevnetEnv(DEVNET_BASE_RPC_URL, DEVNET_OPTIMISM_RPC_URL),
    TOPUP_SOURCES: 'base,optimism',
    // The gateway pays settlements out to the worker's top-up relayer (devnet: its relayer), which then deposits.
    TOPUP_RELAYER_ADDRESS: privateKeyToAddress(
      (env.TOPUP_RELAYER_PRIVATE_KEY || env.RELAYER_PRIVATE_KEY || DEVNET_RELAYER_KEY) as `0x${string}`,
    ),
  };
  return Object.fromEntries(Object.entries(defaults).filter(([k]) => !env[k]));
}

/** After the shared contracts: the merchant contract and its deposit key on `base`, with the worker's top-up relayer allowed. */
export async function deployTopupContracts(
  network: EvmNetwork,
  rpcUrl: string,
  chainId: number,
  relayer: Address,
): Promise<string | undefined> {
  if (network.id !== TOPUP_DESTINATION_NETWORK) return undefined;
  const { merchant, depositor } = await deployTopupDevnet({ rpcUrl, chainId, relayers: [relayer] });
  return `merchant contract ${merchant} on ${network.id}, deposit key ${depositor}, relayer allowed`;
}

/** Port and public URL of the gateway, as the gateway itself reads them. */
export function topupEndpoint(env: NodeJS.ProcessEnv): { port: number; url: string; merchant: string } {
  const c = loadTopupConfig(env);
  return { port: c.TOPUP_PORT, url: c.topupUrl, merchant: c.TOPUP_MERCHANT_ID };
}
