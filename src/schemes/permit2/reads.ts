import type { EvmNetwork } from '../../chains/networks';
import { publicClientFor } from '../../chains/evm/clients';
import type { Permit2ChainReads } from './verify';
import { chainSignatureReads } from '../../chains/evm/buyer-signature';
import { permit2Abi, tokenAbi } from '../../chains/evm/abi';

/** The reads Permit2 verification needs, over the network's RPC. */
export function permit2Reads(network: EvmNetwork): Permit2ChainReads {
  const client = publicClientFor(network);
  return {
    ...chainSignatureReads(network),
    balanceOf: (token, owner) => client.readContract({ address: token, abi: tokenAbi, functionName: 'balanceOf', args: [owner] }),
    allowance: (token, owner, spender) =>
      client.readContract({ address: token, abi: tokenAbi, functionName: 'allowance', args: [owner, spender] }),
    nonceBitmap: (permit2, owner, wordPos) =>
      client.readContract({ address: permit2, abi: permit2Abi, functionName: 'nonceBitmap', args: [owner, wordPos] }),
    async eip2612(token, owner) {
      // A token without EIP-2612 reverts (or has no code): the permit2612 cannot be applied.
      const [domainSeparator, nonce] = await Promise.all([
        client.readContract({ address: token, abi: tokenAbi, functionName: 'DOMAIN_SEPARATOR' }).catch(() => undefined),
        client.readContract({ address: token, abi: tokenAbi, functionName: 'nonces', args: [owner] }).catch(() => undefined),
      ]);
      return domainSeparator === undefined || nonce === undefined ? undefined : { domainSeparator, nonce };
    },
  };
}
