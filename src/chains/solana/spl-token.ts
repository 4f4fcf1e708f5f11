import { PublicKey } from '@solana/web3.js';

/**
 * The few SPL Token facts the service needs: program ids, associated token addresses and the two
 * fixed account layouts. Written here so the production tree does not pull `@solana/spl-token`, whose
 * `bigint-buffer` dependency has CVE-2025-3194; tests check every function against that package.
 */

export const TOKEN_PROGRAM_ID = new PublicKey('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA');
export const TOKEN_2022_PROGRAM_ID = new PublicKey('TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb');
export const ASSOCIATED_TOKEN_PROGRAM_ID = new PublicKey('ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL');

/** Token account: mint(32) owner(32) amount(u64) …; 165 bytes in both programs (Token-2022 appends extensions). */
export const ACCOUNT_SIZE = 165;
/** Mint: mintAuthorityOption(4) mintAuthority(32) supply(u64) decimals(u8) isInitialized(u8) …; 82 bytes. */
export const MINT_SIZE = 82;

export const isTokenProgram = (p: PublicKey) => p.equals(TOKEN_PROGRAM_ID) || p.equals(TOKEN_2022_PROGRAM_ID);

/** The associated token address of `owner` for `mint` (off-curve owners such as PDAs allowed). */
export function associatedTokenAddress(mint: PublicKey, owner: PublicKey, tokenProgram = TOKEN_PROGRAM_ID): PublicKey {
  return PublicKey.findProgramAddressSync([owner.toBuffer(), tokenProgram.toBuffer(), mint.toBuffer()], ASSOCIATED_TOKEN_PROGRAM_ID)[0];
}

export function decodeTokenAccount(data: Uint8Array): { mint: PublicKey; owner: PublicKey; amount: bigint } {
  if (data.length < ACCOUNT_SIZE) throw new RangeError(`a token account is ${ACCOUNT_SIZE} bytes, got ${data.length}`);
  const b = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return { mint: new PublicKey(b.subarray(0, 32)), owner: new PublicKey(b.subarray(32, 64)), amount: b.readBigUInt64LE(64) };
}

export function decodeMint(data: Uint8Array): { decimals: number; isInitialized: boolean } {
  if (data.length < MINT_SIZE) throw new RangeError(`a mint is ${MINT_SIZE} bytes, got ${data.length}`);
  return { decimals: data[44], isInitialized: data[45] !== 0 };
}
