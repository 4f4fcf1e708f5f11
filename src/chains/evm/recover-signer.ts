import { recover } from 'tiny-secp256k1';
import { bytesToHex, hexToBytes, size, type Address, type Hex } from 'viem';
import { publicKeyToAddress } from 'viem/accounts';

/** Half the secp256k1 order: EIP-2 (and USDC, Permit2, EIP-2612 tokens) reject a signature whose s is above it. */
export const SECP256K1N_HALF = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;

/**
 * The address whose key made the 65-byte `signature` (r‖s‖v, v 0/1 or 27/28) over the 32-byte
 * `hash`, as viem's `recoverAddress` answers it, and throwing where it throws (another length or v,
 * r or s out of range, r not on the curve). Every buyer signature we check recovers through here.
 *
 * Why not viem's own: its pure-JS secp256k1 takes ~2 ms of CPU per recovery, the largest single
 * item of a settlement's verification; libsecp256k1 (compiled to WebAssembly by tiny-secp256k1)
 * takes a fifth of that (docs/decisions/signature-recovery.md).
 */
export function recoverSigner(hash: Hex, signature: Hex): Address {
  if (size(signature) !== 65) throw new Error('invalid signature length');
  const bytes = hexToBytes(signature);
  const v = bytes[64];
  const recoveryId = v === 0 || v === 27 ? 0 : v === 1 || v === 28 ? 1 : undefined;
  if (recoveryId === undefined) throw new Error(`invalid signature v ${v}`);
  const publicKey = recover(hexToBytes(hash), bytes.subarray(0, 64), recoveryId, false);
  if (!publicKey) throw new Error('signature recovers no public key');
  return publicKeyToAddress(bytesToHex(publicKey));
}
