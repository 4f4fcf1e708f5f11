import type { Address, Hex } from 'viem';
import { authorizationTypes } from '../../chains/evm/abi/generated';
import type { Eip3009Authorization } from '../../x402/schemas';

/** EIP-712 typed data of an EIP-3009 `TransferWithAuthorization`, as x402 buyers sign it (@x402/evm's `authorizationTypes`). */
export const transferWithAuthorizationTypes = authorizationTypes;

export interface TokenDomain {
  name: string;
  version: string;
  chainId: number;
  verifyingContract: Address;
}

export function transferWithAuthorizationTypedData(domain: TokenDomain, a: Eip3009Authorization) {
  return {
    domain,
    types: transferWithAuthorizationTypes,
    primaryType: 'TransferWithAuthorization' as const,
    message: {
      from: a.from as Address,
      to: a.to as Address,
      value: BigInt(a.value),
      validAfter: BigInt(a.validAfter),
      validBefore: BigInt(a.validBefore),
      nonce: a.nonce as Hex,
    },
  };
}
