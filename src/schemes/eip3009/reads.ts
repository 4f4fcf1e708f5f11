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
