import type { EvmNetwork } from '../../chains/networks';
import { tokenAbi } from '../../chains/evm/abi';
import { publicClientFor } from '../../chains/evm/clients';
import type { ExactEvmChainReads } from './verify';

/** The token reads EIP-3009 verification needs, over the network's RPC. */
export function tokenReads(network: EvmNetwork): ExactEvmChainReads {
  const client = publicClientFor(network);
  return {
    balanceOf: (token, owner) => client.readContract({ address: token, abi: tokenAbi, functionName: 'balanceOf', args: [owner] }),
    authorizationState: (token, authorizer, nonce) =>
      client.readContract({ address: token, abi: tokenAbi, functionName: 'authorizationState', args: [authorizer, nonce] }),
  };
}

/** Chain reads that assume the best: with them verification checks only what needs no chain. */
export const NO_CHAIN_READS: ExactEvmChainReads = {
  balanceOf: async () => 2n ** 256n - 1n,
  authorizationState: async () => false,
};

/**
 * The chain reads, answered without a call where the settling transaction's simulation succeeded:
 * the facilitator's `settleSplit` pulls the authorization, so it runs only with the balance there
 * and the nonce unused. A simulation that reverted reads both, to name the reason; one that got no
 * answer (a rejected `simulated`) fails them as their own calls would.
 */
export const readsUnlessSimulated = (simulated: Promise<boolean>, reads: ExactEvmChainReads): ExactEvmChainReads => ({
  balanceOf: async (...a) => ((await simulated) ? NO_CHAIN_READS.balanceOf(...a) : reads.balanceOf(...a)),
  authorizationState: async (...a) => ((await simulated) ? NO_CHAIN_READS.authorizationState(...a) : reads.authorizationState(...a)),
});
