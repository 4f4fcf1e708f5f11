import { getAddress, type Address } from 'viem';

/**
 * EIP-712 typed data of an x402 Permit2 payment as buyers sign it: Permit2's
 * PermitWitnessTransferFrom under the domain {name: 'Permit2', chainId, verifyingContract: Permit2}
 * (no version), spender = the exact or upto proxy, with the scheme's witness. Shared by the
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

const tokenPermissions = [
  { name: 'token', type: 'address' },
  { name: 'amount', type: 'uint256' },
] as const;
const permitWitnessTransferFrom = [
  { name: 'permitted', type: 'TokenPermissions' },
  { name: 'spender', type: 'address' },
  { name: 'nonce', type: 'uint256' },
  { name: 'deadline', type: 'uint256' },
  { name: 'witness', type: 'Witness' },
] as const;

/** The witness struct of each proxy (X402ExactPermit2Proxy / X402UptoPermit2Proxy WITNESS_TYPE_STRING). */
export const PERMIT2_WITNESS_TYPES = {
  exact: [
    { name: 'to', type: 'address' },
    { name: 'validAfter', type: 'uint256' },
  ],
  upto: [
    { name: 'to', type: 'address' },
    { name: 'facilitator', type: 'address' },
    { name: 'validAfter', type: 'uint256' },
  ],
} as const;

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
    types: {
      PermitWitnessTransferFrom: permitWitnessTransferFrom,
      TokenPermissions: tokenPermissions,
      Witness: PERMIT2_WITNESS_TYPES[scheme],
    },
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
