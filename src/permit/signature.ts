import {
  concat,
  encodeAbiParameters,
  getAddress,
  hexToBigInt,
  isAddressEqual,
  keccak256,
  serializeSignature,
  slice,
  toHex,
  type Address,
  type Hex,
} from 'viem';
import type { PermitRequest } from './schema';
import { recoverSigner, SECP256K1N_HALF } from '../chains/evm/recover-signer';

/**
 * EIP-2612 signature handling for POST /v1/permit: both request forms (`v`/`r`/`s` and the 65-byte
 * `signature`) resolve to one normalised (v, r, s); the workflow id hashes that, so both spellings
 * of one signature are the same permit. Pure code, shared by the API and the worker.
 */

export interface PermitSignature {
  v: 27 | 28;
  r: Hex;
  s: Hex;
  /** keccak256 of r || s || v (65 bytes, v as 27/28): the signature part of the workflow id. */
  sighash: Hex;
}

export type ResolvedSignature = ({ ok: true } & PermitSignature) | { ok: false; message: string };

/**
 * The (v, r, s) a request carries. A 65-byte signature's last byte may be 0/1 (y parity) or 27/28;
 * the `v` field must be 27 or 28 (0 counts as missing). r and s must be non-zero and s in the lower
 * half of the curve order (EIP-2), as tokens require; anything else is no usable signature.
 */
export function resolvePermitSignature(req: Pick<PermitRequest, 'v' | 'r' | 's' | 'signature'>): ResolvedSignature {
  let v: number;
  let r: Hex;
  let s: Hex;
  if (req.signature !== undefined) {
    r = slice(req.signature, 0, 32);
    s = slice(req.signature, 32, 64);
    const last = Number(hexToBigInt(slice(req.signature, 64, 65)));
    v = last < 2 ? last + 27 : last;
    if (v !== 27 && v !== 28) return { ok: false, message: `signature: recovery byte must be 27 or 28 (or 0/1), got ${last}` };
  } else {
    if (req.v === undefined || req.r === undefined || req.s === undefined) {
      return { ok: false, message: 'v, r and s are needed together (v 0 counts as missing)' };
    }
    ({ v, r, s } = req as { v: number; r: Hex; s: Hex });
    if (v !== 27 && v !== 28) return { ok: false, message: `v must be 27 or 28, got ${v}` };
  }
  r = r.toLowerCase() as Hex;
  s = s.toLowerCase() as Hex;
  if (hexToBigInt(r) === 0n || hexToBigInt(s) === 0n) return { ok: false, message: 'r and s must be non-zero' };
  if (hexToBigInt(s) > SECP256K1N_HALF) return { ok: false, message: 's is in the upper half of the curve order (EIP-2)' };
  return { ok: true, v: v as 27 | 28, r, s, sighash: permitSighash(v, r, s) };
}

/** keccak256 of the 65-byte r || s || v with v as 27/28. */
export const permitSighash = (v: number, r: Hex, s: Hex): Hex => keccak256(concat([r, s, toHex(v, { size: 1 })]));

export const PERMIT_TYPEHASH = keccak256(toHex('Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)'));

export interface PermitMessage {
  owner: Address;
  spender: Address;
  value: bigint;
  nonce: bigint;
  deadline: bigint;
}

/**
 * The EIP-712 digest a token checks in `permit`, built on the token's own `DOMAIN_SEPARATOR()`
 * (part of EIP-2612), so it holds for any token without knowing its name or version.
 */
export function permitDigest(domainSeparator: Hex, m: PermitMessage): Hex {
  const structHash = keccak256(
    encodeAbiParameters(
      [{ type: 'bytes32' }, { type: 'address' }, { type: 'address' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }],
      [PERMIT_TYPEHASH, getAddress(m.owner.toLowerCase()), getAddress(m.spender.toLowerCase()), m.value, m.nonce, m.deadline],
    ),
  );
  return keccak256(concat(['0x1901', domainSeparator, structHash]));
}

/** Whether (v, r, s) is `m.owner`'s signature of the permit `m` under `domainSeparator`. */
export function isPermitSignedByOwner(domainSeparator: Hex, m: PermitMessage, sig: Pick<PermitSignature, 'v' | 'r' | 's'>): boolean {
  try {
    const recovered = recoverSigner(permitDigest(domainSeparator, m), serializeSignature({ r: sig.r, s: sig.s, v: BigInt(sig.v) }));
    return isAddressEqual(recovered, getAddress(m.owner.toLowerCase()));
  } catch {
    return false; // r is not an x coordinate on the curve
  }
}
