import { getAddress, type Address } from 'viem';
import { permit2WitnessTypes, uptoPermit2WitnessTypes } from '../../chains/evm/abi/generated';

/**
 * EIP-712 typed data of an x402 Permit2 payment as buyers sign it: Permit2's
 * PermitWitnessTransferFrom under the domain {name: 'Permit2', chainId, verifyingContract: Permit2}
 * (no version), spender = the exact or upto proxy, with the scheme's witness (the types as @x402/evm
 * exports them, generated into chains/evm/abi/generated). Shared by the
 * verification and the tests, so both sign and check exactly one definition.
 */
export type Permit2Scheme = 'exact' | 'upto';

export interface Permit2Message {
  permitted: { token: Address; amount: bigint };
  spender: Address;
  nonce: bigint;
  deadline: bigint;
  witness: { to: Address; validAfter: bigint; facilitator?: Address };
}

export function permit2WitnessTypedData(scheme: Permit2Scheme, chainId: number, permit2: Address, m: Permit2Message) {
  const c = (a: string) => getAddress(a.toLowerCase());
  const witness =
    scheme === 'exact'
      ? { to: c(m.witness.to), validAfter: m.witness.validAfter }
      : {
          to: c(m.witness.to),
          facilitator: c(m.witness.facilitator ?? '0x0000000000000000000000000000000000000000'),
          validAfter: m.witness.validAfter,
        };
  return {
    domain: { name: 'Permit2', chainId, verifyingContract: c(permit2) },
    types: scheme === 'exact' ? permit2WitnessTypes : uptoPermit2WitnessTypes,
    primaryType: 'PermitWitnessTransferFrom' as const,
    message: {
      permitted: { token: c(m.permitted.token), amount: m.permitted.amount },
      spender: c(m.spender),
      nonce: m.nonce,
      deadline: m.deadline,
      witness,
    },
  };
}

/** Whether `nonce` is marked used in Permit2's unordered-nonce bitmap word `nonce >> 8`. */
export const isNonceBitSet = (word: bigint, nonce: bigint): boolean => ((word >> (nonce & 255n)) & 1n) === 1n;
