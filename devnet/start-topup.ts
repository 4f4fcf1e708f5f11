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

/**
 * `npm start` additions for the top-up gateway: the devnet `base` chain (chain id 8453, so real x402
 * clients sign for `base`) with our contracts at the devnet addresses. Only variables the user did
 * not set are filled in.
 */
export function topupDevnetEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const defaults: Record<string, string> = {
    RPC_URLS_BASE: DEVNET_BASE_RPC_URL,
    FACILITATOR_ADDRESS_MAINNET: DEVNET_FACILITATOR_ADDRESS,
    USDC_ADDRESS_BASE: DEVNET_USDC_ADDRESS,
    // The gateway pays settlements out to the worker's relayer, which then deposits.
    TOPUP_RELAYER_ADDRESS: privateKeyToAddress((env.RELAYER_PRIVATE_KEY || DEVNET_RELAYER_KEY) as `0x${string}`),
  };
  return Object.fromEntries(Object.entries(defaults).filter(([k]) => !env[k]));
}

/** After the shared contracts: the merchant contract on `base`, with the worker's relayer allowed. */
export async function deployTopupContracts(network: EvmNetwork, rpcUrl: string, chainId: number, relayer: Address): Promise<string | undefined> {
  if (network.id !== TOPUP_DESTINATION_NETWORK) return undefined;
  const { merchant } = await deployTopupDevnet({ rpcUrl, chainId, relayers: [relayer] });
  return `merchant contract ${merchant} on ${network.id}, relayer allowed`;
}

/** Port and public URL of the gateway, as the gateway itself reads them. */
export function topupEndpoint(env: NodeJS.ProcessEnv): { port: number; url: string; merchant: string } {
  const c = loadTopupConfig(env);
  return { port: c.TOPUP_PORT, url: c.topupUrl, merchant: c.TOPUP_MERCHANT_ID };
}
