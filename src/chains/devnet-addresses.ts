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
 * Deployment order on a fresh chain: nonce 0 USDC (Circle's FiatTokenProxy, so the deployer is its
 * proxy admin), nonce 1 facilitator.
 */
export const DEVNET_USDC_ADDRESS = getContractAddress({ from: DEVNET_DEPLOYER_ADDRESS, nonce: 0n });
export const DEVNET_FACILITATOR_ADDRESS = getContractAddress({ from: DEVNET_DEPLOYER_ADDRESS, nonce: 1n });
/**
 * The devnet USDC's issuer (devnet/deploy-usdc.ts): it deploys Circle's SignatureChecker library
 * (nonce 0) and the FiatToken V2.2 implementation linked to it (nonce 1), then holds every token role
 * (owner, master minter, pauser, blacklister) and is the devnet minter that funds accounts. The proxy
 * admin (the main deployer) is another account, as FiatTokenProxy requires: its admin cannot call the token.
 */
export const DEVNET_USDC_ISSUER_KEY = '0x9e002df360cbb94519d39568c366a1d7884f9debff7f6ab073cfd6bcc827ba9a' as const;
export const DEVNET_USDC_ISSUER_ADDRESS: Address = privateKeyToAddress(DEVNET_USDC_ISSUER_KEY);
export const DEVNET_USDC_SIGNATURE_CHECKER_ADDRESS = getContractAddress({ from: DEVNET_USDC_ISSUER_ADDRESS, nonce: 0n });
export const DEVNET_USDC_IMPLEMENTATION_ADDRESS = getContractAddress({ from: DEVNET_USDC_ISSUER_ADDRESS, nonce: 1n });
/**
 * Permit2 and the x402 exact/upto Permit2 proxies sit at the addresses every x402 v2 buyer signs for
 * (`@x402/evm`: Uniswap's canonical Permit2 and x402's vanity proxy addresses, the same on every
 * chain), so an SDK-signed Permit2 payment verifies here unchanged. They are real production
 * addresses, not devnet ones: the devnet places our own contracts of the same interfaces there
 * with `anvil_setCode` (devnet/deploy.ts).
 */
export const PERMIT2_CANONICAL_ADDRESS: Address = '0x000000000022D473030F116dDEE9F6B43aC78BA3';
export const X402_EXACT_PERMIT2_PROXY_ADDRESS: Address = '0x402085c248EeA27D92E8b30b2C58ed07f9E20001';
export const X402_UPTO_PERMIT2_PROXY_ADDRESS: Address = '0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002';

// ------------------------------------------------------------------------------------------------
// Cross-chain bridge (CCTP-style pair, devnet/contracts/CctpStyleBridge.sol): its own devnet-only
// deployer, so its nonces never collide with the deployer above. Nonce 0 the token messenger,
// nonce 1 the message transmitter, on every devnet chain. The attester keys sign burn messages in
// the attester double (devnet/bridge-attester.ts); the transmitters enable all three addresses and
// require DEVNET_BRIDGE_SIGNATURE_THRESHOLD of them per message (m of n, as Circle's attesters).
// ------------------------------------------------------------------------------------------------
export const DEVNET_BRIDGE_DEPLOYER_KEY = '0x7df3ae73573a784dabf795acb3852aadbdab6a7d5717a0c777ed6bf9a36f5602' as const;
export const DEVNET_BRIDGE_DEPLOYER_ADDRESS: Address = privateKeyToAddress(DEVNET_BRIDGE_DEPLOYER_KEY);
export const DEVNET_BRIDGE_MESSENGER_ADDRESS = getContractAddress({ from: DEVNET_BRIDGE_DEPLOYER_ADDRESS, nonce: 0n });
export const DEVNET_BRIDGE_TRANSMITTER_ADDRESS = getContractAddress({ from: DEVNET_BRIDGE_DEPLOYER_ADDRESS, nonce: 1n });
export const DEVNET_BRIDGE_ATTESTER_KEYS = [
  '0x4b5f7d672f51286ec5d52f63882321c38856b12b764aa440335287bce540a90c',
  '0xd404ae6ef3d6258b194cb59dcc4be2a01f8db67aefe3d8175d5c99dedbc3cebf',
  '0x3eb55d48dfb55e1b6eb9b2cf45b8af66d395167bf2620d097869c753b05019e9',
] as const;
export const DEVNET_BRIDGE_ATTESTER_ADDRESSES: readonly Address[] = DEVNET_BRIDGE_ATTESTER_KEYS.map((k) => privateKeyToAddress(k));
/** Signatures a devnet transmitter requires per message (Circle's `signatureThreshold`). */
export const DEVNET_BRIDGE_SIGNATURE_THRESHOLD = 2;
/** Where the devnet transmitters send the bridge fee they keep (an address nobody holds a key for). */
export const DEVNET_BRIDGE_FEE_COLLECTOR: Address = '0x000000000000000000000000000000000000b71d';
/** Fast-transfer fee of the devnet attester double: 10 bps of the burned amount, capped at the message's maxFee (standard: none, as Circle). */
export const DEVNET_BRIDGE_FEE_BPS = 10;
/**
 * Top-up gateway (src/topup): its own devnet-only deployer key, so its contracts never consume the
 * nonces above. Nonce 0: the merchant contract (MerchantBalances) on the devnet `base` chain.
 */
export const DEVNET_TOPUP_DEPLOYER_KEY = '0x705fd44b7b6947796ad67377742b99d92c6c73b32b5e5c0292b31bc5858b3ea9' as const;
export const DEVNET_TOPUP_DEPLOYER_ADDRESS: Address = privateKeyToAddress(DEVNET_TOPUP_DEPLOYER_KEY);
export const DEVNET_MERCHANT_ADDRESS = getContractAddress({ from: DEVNET_TOPUP_DEPLOYER_ADDRESS, nonce: 0n });
/**
 * The top-up deposit key (OnceDepositor) on the devnet `base` chain: nonce 0 of a deployer key of its
 * own, so its address does not depend on how many calls the merchant deployer has made.
 */
export const DEVNET_DEPOSITOR_DEPLOYER_KEY = '0x70c02ef88a8753d92e3883cea778f7c76e4eba239a56afe9e91fbad636a48498' as const;
export const DEVNET_DEPOSITOR_ADDRESS = getContractAddress({ from: privateKeyToAddress(DEVNET_DEPOSITOR_DEPLOYER_KEY), nonce: 0n });
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
/**
 * Smart-wallet buyers (EIP-1271 / EIP-6492): the devnet's wallet factory
 * (devnet/contracts/DevnetSmartWallet.sol), deployed on every devnet chain from a deployer key of its
 * own at nonce 0. It is the devnet default of the factories a counterfactual wallet may be deployed
 * through (`SMART_WALLET_FACTORIES_<NET>`); production refuses it like every devnet address.
 */
export const DEVNET_WALLET_FACTORY_DEPLOYER_KEY = '0xba9cbba1a2b0760a04a1096580f1984994c7c74c6c297e9b9b95ca762afcb346' as const;
export const DEVNET_WALLET_FACTORY_DEPLOYER_ADDRESS: Address = privateKeyToAddress(DEVNET_WALLET_FACTORY_DEPLOYER_KEY);
export const DEVNET_WALLET_FACTORY_ADDRESS = getContractAddress({ from: DEVNET_WALLET_FACTORY_DEPLOYER_ADDRESS, nonce: 0n });
