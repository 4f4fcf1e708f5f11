import {
  bridgeMessageTransmitterAbi,
  bridgeTokenMessengerAbi,
  devnetSmartWalletFactoryAbi,
  fiatTokenV2_2Abi,
  gatewayWalletAbi,
  merchantBalancesAbi,
  onceDepositorAbi,
  permit2Abi,
  x402ExactPermit2ProxyAbi,
  x402FacilitatorAbi,
  x402UptoPermit2ProxyAbi,
} from './generated';

/**
 * The ABIs of the EVM contracts the service calls, under the names the code uses. Every ABI is
 * generated (`npm run abis`, tools/abis.ts, into ./generated) from the compiled contracts, never
 * written by hand; this module only names them and joins the errors a call can bubble up.
 */

/** USDC: Circle's FiatToken V2.2 (ERC-20, EIP-2612, EIP-3009, blacklist, pause), as Circle compiles it. */
export const tokenAbi = fiatTokenV2_2Abi;

/**
 * Our facilitator contract (devnet/contracts/X402Facilitator.sol): same-chain settlement, permits,
 * Permit2 payments and the cross-chain burn and payout. It bubbles up the token's revert data; USDC
 * reverts with strings (`Error(string)`, which viem decodes without an ABI entry).
 */
export const facilitatorAbi = x402FacilitatorAbi;

/** Custom errors of `abis` without repeats (same name and inputs), so one revert decodes by name. */
function errorsOf(...abis: readonly (readonly { type: string }[])[]) {
  const seen = new Set<string>();
  return abis
    .flat()
    .filter((item) => item.type === 'error')
    .filter((item) => {
      const key = JSON.stringify(item);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    }) as unknown as readonly never[];
}

/**
 * Permit2's SignatureTransfer: the canonical Uniswap contract on real chains, our
 * `devnet/contracts/Permit2.sol` (same names and selectors) on the devnet; no package we may ship
 * exports its ABI. Unordered nonces: word `nonce >> 8`, bit `nonce & 255`.
 */
export { permit2Abi };

/** The x402 `exact` Permit2 proxy with Permit2's errors, which bubble up through it. */
export const exactPermit2ProxyAbi = [...x402ExactPermit2ProxyAbi, ...errorsOf(permit2Abi)] as const;

/** The x402 `upto` Permit2 proxy with Permit2's errors, which bubble up through it. */
export const uptoPermit2ProxyAbi = [...x402UptoPermit2ProxyAbi, ...errorsOf(permit2Abi)] as const;

/**
 * The facilitator's Permit2 calls (`settlePermit2Exact` / `settlePermit2Upto`) with the errors of the
 * proxies and Permit2 appended, so a revert decodes by name whichever contract raised it.
 */
export const facilitatorPermit2Abi = [
  ...x402FacilitatorAbi,
  ...errorsOf(x402ExactPermit2ProxyAbi, x402UptoPermit2ProxyAbi, permit2Abi),
] as const;

/**
 * The smart-wallet factory a counterfactual buyer's EIP-6492 signature names, as the devnet's factory
 * (devnet/contracts/DevnetSmartWallet.sol) takes it; a factory of another signature is refused by its
 * selector (gas-ceilings.ts).
 */
export const walletFactoryAbi = devnetSmartWalletFactoryAbi;

/** Our gateway wallet for batched nanopayments (devnet/contracts/GatewayWallet.sol). */
export { gatewayWalletAbi };

/** EIP-712 domain name and version of batched payments (x402 `extra.name` / `extra.version`), the gateway wallet's domain. */
export const GATEWAY_BATCHED_DOMAIN = { name: 'GatewayWalletBatched', version: '1' } as const;

/** The top-up merchant contract (devnet/contracts/MerchantBalances.sol). */
export const merchantAbi = merchantBalancesAbi;

/** The top-up deposit key (devnet/contracts/OnceDepositor.sol): each top-up's deposit succeeds at most once. */
export const depositorAbi = onceDepositorAbi;

/**
 * Circle's CCTP V2 TokenMessengerV2 and MessageTransmitterV2. No Circle package exports their ABIs
 * (the SDKs embed them), so they are generated from the devnet bridge (devnet/contracts/CctpStyleBridge.sol),
 * which is written to Circle's interface; the service calls only what both share (`depositForBurn`
 * through the facilitator, `receiveMessage`, `usedNonces`, `localDomain`, the `MessageSent` and
 * `MessageReceived` events).
 */
export const tokenMessengerV2Abi = bridgeTokenMessengerAbi;
export const messageTransmitterV2Abi = bridgeMessageTransmitterAbi;

/** The facilitator's cross-chain section (`settleAndBurn`, `receiveAndPayout`, their events): the facilitator's ABI. */
export const facilitatorBridgeAbi = x402FacilitatorAbi;
