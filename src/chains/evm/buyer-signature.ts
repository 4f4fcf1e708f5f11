import {
  isAddressEqual,
  isErc6492Signature,
  isErc8010Signature,
  parseErc6492Signature,
  parseSignature,
  size,
  type Address,
  type Hex,
} from 'viem';
import type { EvmNetwork } from '../networks';
import { publicClientFor } from './clients';
import { recoverSigner, SECP256K1N_HALF } from './recover-signer';

/**
 * Buyer signatures over typed data, from an EOA or a smart-contract wallet (docs/decisions/smart-wallet-buyers.md
 * "Smart-wallet buyers"). An EOA's 65-byte signature is checked here without a call; any other
 * signature, or one that does not recover to the signer, is asked of the chain with viem's
 * `verifyHash`: EIP-1271 `isValidSignature` for a deployed wallet, and for an EIP-6492 signature of
 * a wallet not deployed yet the universal validator, which deploys it inside an `eth_call`.
 */

/** What the chain is asked about a signature local recovery could not confirm. */
export interface SignatureReads {
  /** viem's `verifyHash` against the chain's latest state (EIP-1271, EIP-6492). */
  verifyHash(signer: Address, hash: Hex, signature: Hex): Promise<boolean>;
  /** Whether `address` has code (a deployed wallet). */
  hasCode(address: Address): Promise<boolean>;
}

/** The signature reads over the network's RPC. */
export function chainSignatureReads(network: EvmNetwork): SignatureReads {
  const client = () => publicClientFor(network);
  return {
    verifyHash: (signer, hash, signature) => client().verifyHash({ address: signer, hash, signature }),
    hasCode: async (address) => {
      const code = await client().getCode({ address });
      return code !== undefined && code !== '0x';
    },
  };
}

/** The parts of an EIP-6492 signature: the factory call that deploys the wallet, and the wallet's own signature. */
export interface CounterfactualSignature {
  factory: Address;
  factoryData: Hex;
  /** What the deployed wallet's `isValidSignature` checks, and what a token or Permit2 is given. */
  signature: Hex;
}

/** The EIP-6492 parts of `signature`, or undefined when it is not wrapped. */
export function counterfactualOf(signature: Hex): CounterfactualSignature | undefined {
  if (!isErc6492Signature(signature)) return undefined;
  const { address, data, signature: inner } = parseErc6492Signature(signature);
  if (!address || !data) return undefined;
  return { factory: address, factoryData: data, signature: inner };
}

/** The signature the chain's token or Permit2 is given: an EIP-6492 wrapper's inner signature, else itself. */
export const onChainSignature = (signature: Hex): Hex => counterfactualOf(signature)?.signature ?? signature;

/** Whether `factory` is one the network lets a counterfactual wallet be deployed through (`SMART_WALLET_FACTORIES_<NET>`). */
export const isListedFactory = (network: Pick<EvmNetwork, 'walletFactories'>, factory: Address): boolean =>
  network.walletFactories.some((f) => isAddressEqual(f, factory));

/** A 65-byte signature whose s is in the upper half (EIP-2's malleable twin): USDC and Permit2 refuse it. */
export function isHighS(signature: Hex): boolean {
  if (size(signature) !== 65) return false;
  try {
    return BigInt(parseSignature(signature).s) > SECP256K1N_HALF;
  } catch {
    return true; // not a signature at all
  }
}

/**
 * Whether `signature` is `signer`'s over the EIP-712 digest `hash`, as the token or Permit2 will judge
 * it. No call for an EOA's 65-byte low-s signature. An EIP-6492 signature of a wallet without code
 * counts only through a factory we list (its deployment is ours to pay); an ERC-8010 (pre-delegated
 * EIP-7702) signature is never accepted, since we send no authorization lists.
 */
export async function isSignedBy(
  network: Pick<EvmNetwork, 'walletFactories'>,
  reads: SignatureReads,
  signer: Address,
  hash: Hex,
  signature: Hex,
): Promise<boolean> {
  if (size(signature) === 65) {
    try {
      if (isAddressEqual(recoverSigner(hash, signature), signer)) return !isHighS(signature);
    } catch {
      // not an ECDSA signature: a contract wallet's may still be 65 bytes
    }
  }
  if (isErc8010Signature(signature)) return false;
  const counterfactual = counterfactualOf(signature);
  if (counterfactual && !isListedFactory(network, counterfactual.factory) && !(await reads.hasCode(signer))) return false;
  return reads.verifyHash(signer, hash, signature);
}
