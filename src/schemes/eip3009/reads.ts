import type { EvmNetwork } from '../../chains/networks';
import { publicClientFor } from '../../chains/evm/clients';
import type { ExactEvmChainReads } from './verify';
import { chainSignatureReads } from '../../chains/evm/buyer-signature';
import { tokenAbi } from '../../chains/evm/abi';

/** The token reads EIP-3009 verification needs, over the network's RPC. */
export function tokenReads(network: EvmNetwork): ExactEvmChainReads {
  const client = publicClientFor(network);
  return {
    ...chainSignatureReads(network),
    balanceOf: (token, owner) => client.readContract({ address: token, abi: tokenAbi, functionName: 'balanceOf', args: [owner] }),
    authorizationState: (token, authorizer, nonce) =>
      client.readContract({ address: token, abi: tokenAbi, functionName: 'authorizationState', args: [authorizer, nonce] }),
  };
}

/**
 * Chain reads that assume the best of balance and nonce: with them verification checks only what needs
 * no chain, and a smart wallet's signature, which only the chain can judge (one call; none for an EOA).
 */
export const balanceAndNonceUnread = (network: EvmNetwork): ExactEvmChainReads => ({
  ...chainSignatureReads(network),
  balanceOf: async () => 2n ** 256n - 1n,
  authorizationState: async () => false,
});

/**
 * The chain reads, answered without a call where the settling transaction's simulation succeeded:
 * the facilitator's `settleSplit` pulls the authorization, so it runs only with the balance there
 * and the nonce unused. A simulation that reverted reads both, to name the reason; one that got no
 * answer (a rejected `simulated`) fails them as their own calls would.
 */
export const readsUnlessSimulated = (simulated: Promise<boolean>, reads: ExactEvmChainReads): ExactEvmChainReads => ({
  ...reads,
  balanceOf: async (...a) => ((await simulated) ? 2n ** 256n - 1n : reads.balanceOf(...a)),
  authorizationState: async (...a) => ((await simulated) ? false : reads.authorizationState(...a)),
});
