import type { Address, Hex } from 'viem';
import type { Eip3009Authorization } from '../../x402/schemas';

/** EIP-712 typed data of an EIP-3009 `TransferWithAuthorization`, as x402 buyers sign it. */
export const transferWithAuthorizationTypes = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;

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
