import { getContractAddress, type Address } from 'viem';
import { privateKeyToAddress } from 'viem/accounts';

/**
 * The devnet deploys our contracts from one dedicated key at fixed nonces, so every devnet chain
 * has them at the same addresses (as the spec's "one shared address" per facilitator group).
 * Devnet only: this key is public and must never hold real funds.
 */
export const DEVNET_DEPLOYER_KEY = '0x7852aa47ca0129eee8e75cf49ba958467fb6ba86dd42986cec560c1d735d31e2' as const;
export const DEVNET_DEPLOYER_ADDRESS: Address = privateKeyToAddress(DEVNET_DEPLOYER_KEY);

/**
 * Deployment order on a fresh chain: nonce 0 USDC, nonce 1 facilitator, nonce 2 Permit2, nonce 3 the
 * exact Permit2 proxy, nonce 4 the upto Permit2 proxy (the proxies are the spenders x402 buyers name
 * in their Permit2 signatures; both send funds to the facilitator).
 */
export const DEVNET_USDC_ADDRESS = getContractAddress({ from: DEVNET_DEPLOYER_ADDRESS, nonce: 0n });
export const DEVNET_FACILITATOR_ADDRESS = getContractAddress({ from: DEVNET_DEPLOYER_ADDRESS, nonce: 1n });
export const DEVNET_PERMIT2_ADDRESS = getContractAddress({ from: DEVNET_DEPLOYER_ADDRESS, nonce: 2n });
export const DEVNET_EXACT_PERMIT2_PROXY_ADDRESS = getContractAddress({ from: DEVNET_DEPLOYER_ADDRESS, nonce: 3n });
export const DEVNET_UPTO_PERMIT2_PROXY_ADDRESS = getContractAddress({ from: DEVNET_DEPLOYER_ADDRESS, nonce: 4n });

// --- Gateway wallet (batched nanopayments and withdrawals) ----------------------------------------
/**
 * The gateway wallet is deployed by its own devnet-only deployer key at nonce 0, so its address is
 * the same on every devnet chain (the spec's one testnet gateway-wallet address). The operator key
 * is the devnet upstream gateway's: it applies accepted payments in batches (devnet/gateway-double.ts).
 * Both keys are public in this repository and must never hold real funds.
 */
export const DEVNET_GATEWAY_DEPLOYER_KEY = '0x65bd1a0a9a83c6fd45ba57ac1882060245a097081f4ce221bb7c737fb4234a26' as const;
export const DEVNET_GATEWAY_OPERATOR_KEY = '0x48d591673cecf5e18b2f1ff4c4524ad47ae178a0f18b1ce478911d1f8df52904' as const;
export const DEVNET_GATEWAY_DEPLOYER_ADDRESS: Address = privateKeyToAddress(DEVNET_GATEWAY_DEPLOYER_KEY);
export const DEVNET_GATEWAY_WALLET_ADDRESS = getContractAddress({ from: DEVNET_GATEWAY_DEPLOYER_ADDRESS, nonce: 0n });
