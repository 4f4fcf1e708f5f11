import { createPublicKey, verify as verifySignature } from 'node:crypto';
import { ComputeBudgetProgram, PublicKey, VersionedTransaction } from '@solana/web3.js';
import { associatedTokenAddress, TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID } from '../../chains/solana/spl-token';
import { base58Encode } from '../../chains/solana/base58';
import type { SolanaRpc } from '../../chains/solana/rpc';

/**
 * Verification of an x402 `exact` Solana payment: the buyer's partially signed transaction that we
 * are asked to co-sign as fee payer. Reasons follow the x402 reference facilitator's
 * `invalid_exact_svm_payload_*` names and, where it has them, its check order (docs/decisions/solana-settlement.md
 * "Solana settlement"). `inspectExactSvmTransaction` is pure; `verifyExactSvmOnChain` adds what
 * only the cluster knows (accounts, balance, blockhash, simulation).
 */

export type ExactSvmReason =
  | 'invalid_exact_svm_payload_transaction'
  | 'invalid_exact_svm_payload_fee_payer_mismatch'
  | 'invalid_exact_svm_payload_transaction_instructions_length'
  | 'invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction'
  | 'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction'
  | 'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high'
  | 'invalid_exact_svm_payload_transaction_instructions'
  | 'invalid_exact_svm_payload_transaction_instruction_not_spl_token_transfer_checked'
  | 'invalid_exact_svm_payload_transaction_instruction_not_token_2022_transfer_checked'
  | 'invalid_exact_svm_payload_transaction_not_a_transfer_instruction'
  | 'invalid_exact_svm_payload_transaction_fee_payer_transferring_funds'
  | 'invalid_exact_svm_payload_transaction_fee_payer_included_in_instruction_accounts'
  | 'invalid_exact_svm_payload_mint_mismatch'
  | 'invalid_exact_svm_payload_transaction_transfer_to_incorrect_ata'
  | 'invalid_exact_svm_payload_transaction_amount_mismatch'
  | 'invalid_exact_svm_payload_signature_invalid'
  | 'invalid_exact_svm_payload_transaction_sender_ata_not_found'
  | 'invalid_exact_svm_payload_transaction_receiver_ata_not_found'
  | 'invalid_exact_svm_payload_transaction_simulation_failed'
  | 'settle_exact_svm_block_height_exceeded'
  | 'invalid_payment_requirements'
  | 'insufficient_funds';

/** What is checked against: the requirement's mint (`asset`), seller wallet (`payTo`) and amount. */
export interface ExactSvmRequirements {
  payTo: string;
  asset: string;
  maxAmountRequired: string;
}

export interface TransferChecked {
  programId: PublicKey;
  source: PublicKey;
  mint: PublicKey;
  destination: PublicKey;
  authority: PublicKey;
  amount: bigint;
  decimals: number;
}

export type Inspection =
  | {
      ok: true;
      tx: VersionedTransaction;
      transfer: TransferChecked;
      /** The transfer authority (base58): the x402 payer. */
      payer: string;
      /** The payer's signature (base58): the business key of this payment. */
      payerSignature: string;
      blockhash: string;
    }
  | { ok: false; reason: ExactSvmReason; payer?: string };

/** Compute-unit price cap (micro-lamports per CU): the reference facilitator's 5 lamports per CU. */
export const MAX_COMPUTE_UNIT_PRICE = 5_000_000n;
/**
 * Compute-unit limit cap. The fee payer pays price x limit, so the limit bounds what a buyer can
 * make us spend; a TransferChecked needs ~6k CU and the x402 client asks for what simulation used.
 */
export const MAX_COMPUTE_UNIT_LIMIT = 200_000;
/** Solana's base fee per signature (lamports); the fee payer pays it for every signature the transaction needs. */
export const LAMPORTS_PER_SIGNATURE = 5_000n;

/** What the fee payer pays for a transaction: each signature's base fee plus price (micro-lamports) x limit, rounded up. */
export const feeLamports = (signatures: number, computeUnitPrice: bigint, computeUnitLimit: number): bigint =>
  LAMPORTS_PER_SIGNATURE * BigInt(signatures) + (computeUnitPrice * BigInt(computeUnitLimit) + 999_999n) / 1_000_000n;

/** A serialized transaction is at most 1232 bytes; base64 of that is under 1700 characters. */
export const MAX_TRANSACTION_BASE64 = 1700;

const TRANSFER_CHECKED = 12;
const SET_COMPUTE_UNIT_LIMIT = 2;
const SET_COMPUTE_UNIT_PRICE = 3;
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

interface Ix {
  programId: PublicKey;
  accounts: PublicKey[];
  data: Uint8Array;
}

function decode(base64: string): VersionedTransaction | undefined {
  if (base64.length === 0 || base64.length > MAX_TRANSACTION_BASE64 || !/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) return undefined;
  try {
    const bytes = Buffer.from(base64, 'base64');
    const tx = VersionedTransaction.deserialize(bytes);
    // Re-serializing must give the same bytes (no trailing garbage, canonical encoding).
    return Buffer.from(tx.serialize()).equals(bytes) ? tx : undefined;
  } catch {
    return undefined;
  }
}

/** Ed25519 check of one signature over the message bytes (node:crypto; no extra dependency). */
export function isValidSignature(message: Uint8Array, signature: Uint8Array, signer: PublicKey): boolean {
  if (signature.length !== 64 || signature.every((b) => b === 0)) return false;
  try {
    const key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, signer.toBuffer()]), format: 'der', type: 'spki' });
    return verifySignature(null, message, key, signature);
  } catch {
    return false;
  }
}

/**
 * The x402 v2 SVM client (`@x402/svm`) appends a Memo instruction (the seller's `extra.memo`, else 16
 * random bytes as hex, so two equal payments are two transactions). It names no account and moves
 * nothing; x402's own limit on its data is 256 bytes.
 */
const MEMO_PROGRAM_ID = new PublicKey('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');
const MAX_MEMO_BYTES = 256;
const isMemo = (ix: Ix) => ix.programId.equals(MEMO_PROGRAM_ID) && ix.accounts.length === 0 && ix.data.length <= MAX_MEMO_BYTES;

const u32le = (d: Uint8Array, at: number) => Buffer.from(d).readUInt32LE(at);
const u64le = (d: Uint8Array, at: number) => Buffer.from(d).readBigUInt64LE(at);

/**
 * Every structural rule, no I/O. `feePayer` is our key, the only account allowed in the fee slot;
 * `maxFeeLamports` the most it pays for this transaction (SOLANA_MAX_FEE_LAMPORTS).
 */
export function inspectExactSvmTransaction(
  base64: string,
  req: ExactSvmRequirements,
  feePayer: PublicKey,
  maxFeeLamports: bigint,
): Inspection {
  const tx = decode(base64);
  // Lookup tables would hide accounts from these checks; the x402 client never uses them.
  if (!tx || tx.message.addressTableLookups.length > 0) return { ok: false, reason: 'invalid_exact_svm_payload_transaction' };
  const msg = tx.message;
  const keys = msg.staticAccountKeys;
  const ixs: Ix[] = msg.compiledInstructions.map((ix) => ({
    programId: keys[ix.programIdIndex],
    accounts: ix.accountKeyIndexes.map((i) => keys[i]),
    data: ix.data,
  }));
  const fail = (reason: ExactSvmReason, payer?: string): Inspection => ({ ok: false, reason, payer });
  // Best effort: the payer of a rejected payment is still worth reporting.
  const third = ixs[2];
  const payerGuess = third && third.accounts.length >= 4 ? third.accounts[3].toBase58() : undefined;

  if (!keys[0]?.equals(feePayer)) return fail('invalid_exact_svm_payload_fee_payer_mismatch', payerGuess);
  if (ixs.length !== 3 && !(ixs.length === 4 && isMemo(ixs[3]))) {
    return fail('invalid_exact_svm_payload_transaction_instructions_length', payerGuess);
  }

  const [limit, price, transferIx] = ixs;
  if (
    !limit.programId.equals(ComputeBudgetProgram.programId) ||
    limit.data.length !== 5 ||
    limit.data[0] !== SET_COMPUTE_UNIT_LIMIT ||
    u32le(limit.data, 1) > MAX_COMPUTE_UNIT_LIMIT
  ) {
    return fail('invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction', payerGuess);
  }
  if (!price.programId.equals(ComputeBudgetProgram.programId) || price.data.length !== 9 || price.data[0] !== SET_COMPUTE_UNIT_PRICE) {
    return fail('invalid_exact_svm_payload_transaction_instructions_compute_price_instruction', payerGuess);
  }
  // The per-instruction caps alone let a buyer make us pay about 1,000,000 lamports; the total is capped too.
  const fee = feeLamports(msg.header.numRequiredSignatures, u64le(price.data, 1), u32le(limit.data, 1));
  if (u64le(price.data, 1) > MAX_COMPUTE_UNIT_PRICE || fee > maxFeeLamports) {
    return fail('invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high', payerGuess);
  }

  const isToken = transferIx.programId.equals(TOKEN_PROGRAM_ID);
  const isToken2022 = transferIx.programId.equals(TOKEN_2022_PROGRAM_ID);
  if (!isToken && !isToken2022) return fail('invalid_exact_svm_payload_transaction_not_a_transfer_instruction', payerGuess);
  if (transferIx.data[0] !== TRANSFER_CHECKED) {
    return fail(
      isToken
        ? 'invalid_exact_svm_payload_transaction_instruction_not_spl_token_transfer_checked'
        : 'invalid_exact_svm_payload_transaction_instruction_not_token_2022_transfer_checked',
      payerGuess,
    );
  }
  if (transferIx.data.length !== 10 || transferIx.accounts.length < 4)
    return fail('invalid_exact_svm_payload_transaction_instructions', payerGuess);
  const [source, mint, destination, authority] = transferIx.accounts;
  const transfer: TransferChecked = {
    programId: transferIx.programId,
    source,
    mint,
    destination,
    authority,
    amount: u64le(transferIx.data, 1),
    decimals: transferIx.data[9],
  };
  const payer = authority.toBase58();

  // Our key pays fees only: it may neither authorize the transfer nor appear in any instruction.
  if (authority.equals(feePayer)) return fail('invalid_exact_svm_payload_transaction_fee_payer_transferring_funds', payer);
  if (ixs.some((ix) => ix.accounts.some((a) => a.equals(feePayer)))) {
    return fail('invalid_exact_svm_payload_transaction_fee_payer_included_in_instruction_accounts', payer);
  }

  if (mint.toBase58() !== req.asset) return fail('invalid_exact_svm_payload_mint_mismatch', payer);
  // Paying oneself moves nothing but the fee we pay, at no cost to whoever repeats it (issue 39).
  if (payer === req.payTo) return fail('invalid_payment_requirements', payer);
  let payToAta: PublicKey;
  try {
    payToAta = associatedTokenAddress(mint, new PublicKey(req.payTo), transfer.programId);
  } catch {
    return fail('invalid_exact_svm_payload_transaction_transfer_to_incorrect_ata', payer);
  }
  if (!destination.equals(payToAta)) return fail('invalid_exact_svm_payload_transaction_transfer_to_incorrect_ata', payer);
  if (transfer.amount !== BigInt(req.maxAmountRequired)) return fail('invalid_exact_svm_payload_transaction_amount_mismatch', payer);

  // Every signer but us (index 0) must already have signed this exact message, the payer included.
  const required = msg.header.numRequiredSignatures;
  const authorityIndex = keys.findIndex((k) => k.equals(authority));
  if (authorityIndex <= 0 || authorityIndex >= required) return fail('invalid_exact_svm_payload_signature_invalid', payer);
  const message = msg.serialize();
  for (let i = 1; i < required; i++) {
    if (!isValidSignature(message, tx.signatures[i], keys[i])) return fail('invalid_exact_svm_payload_signature_invalid', payer);
  }

  return { ok: true, tx, transfer, payer, payerSignature: base58Encode(tx.signatures[authorityIndex]), blockhash: msg.recentBlockhash };
}

/**
 * The rules only the cluster can answer, after `inspectExactSvmTransaction` passed: the blockhash can
 * still land, both token accounts exist, the source is not ours and holds the amount, and the
 * transaction simulates cleanly.
 */
export async function verifyExactSvmOnChain(
  inspection: Extract<Inspection, { ok: true }>,
  rpc: SolanaRpc,
  feePayer: PublicKey,
): Promise<{ isValid: true } | { isValid: false; invalidReason: ExactSvmReason }> {
  const fail = (invalidReason: ExactSvmReason) => ({ isValid: false as const, invalidReason });
  const { transfer } = inspection;
  if (!(await rpc.isBlockhashValid(inspection.blockhash))) return fail('settle_exact_svm_block_height_exceeded');

  const [source, destination] = await Promise.all([rpc.tokenAccount(transfer.source), rpc.tokenAccount(transfer.destination)]);
  if (!source || !source.mint.equals(transfer.mint)) return fail('invalid_exact_svm_payload_transaction_sender_ata_not_found');
  // A token account of our key, spent through a delegate, would still be our funds.
  if (source.owner.equals(feePayer)) return fail('invalid_exact_svm_payload_transaction_fee_payer_transferring_funds');
  if (!destination) return fail('invalid_exact_svm_payload_transaction_receiver_ata_not_found');
  if (source.amount < transfer.amount) return fail('insufficient_funds');

  const sim = await rpc.simulate(inspection.tx);
  if (sim.err) return fail('invalid_exact_svm_payload_transaction_simulation_failed');
  return { isValid: true };
}
