import {
  ComputeBudgetProgram,
  Keypair,
  PublicKey,
  TransactionInstruction,
  TransactionMessage,
  VersionedTransaction,
} from '@solana/web3.js';
import { createTransferCheckedInstruction, getAssociatedTokenAddressSync, TOKEN_PROGRAM_ID } from '@solana/spl-token';

/**
 * Builds an x402 `exact` Solana payment the way the x402 v1 client does: a v0 transaction with
 * fee payer = the facilitator's key (`extra.feePayer`), [SetComputeUnitLimit, SetComputeUnitPrice,
 * TransferChecked(buyer ATA -> ATA(payTo, mint))], partially signed by the buyer only.
 * `instructions`/`signers`/... override parts to build the invalid variants.
 */
export interface SvmPaymentOptions {
  buyer: Keypair;
  payTo: PublicKey;
  mint: PublicKey;
  feePayer: PublicKey;
  amount: bigint;
  blockhash: string;
  decimals?: number;
  units?: number;
  microLamports?: number | bigint;
  tokenProgram?: PublicKey;
  /** Replaces the whole instruction list. */
  instructions?: (base: TransactionInstruction[]) => TransactionInstruction[];
  signers?: Keypair[];
}

export function svmTransferInstructions(o: SvmPaymentOptions): TransactionInstruction[] {
  const program = o.tokenProgram ?? TOKEN_PROGRAM_ID;
  const source = getAssociatedTokenAddressSync(o.mint, o.buyer.publicKey, true, program);
  const destination = getAssociatedTokenAddressSync(o.mint, o.payTo, true, program);
  return [
    ComputeBudgetProgram.setComputeUnitLimit({ units: o.units ?? 20_000 }),
    ComputeBudgetProgram.setComputeUnitPrice({ microLamports: o.microLamports ?? 1 }),
    createTransferCheckedInstruction(source, o.mint, destination, o.buyer.publicKey, o.amount, o.decimals ?? 6, [], program),
  ];
}

export function svmPaymentTransaction(o: SvmPaymentOptions): VersionedTransaction {
  const base = svmTransferInstructions(o);
  const message = new TransactionMessage({
    payerKey: o.feePayer,
    recentBlockhash: o.blockhash,
    instructions: o.instructions ? o.instructions(base) : base,
  }).compileToV0Message();
  const tx = new VersionedTransaction(message);
  tx.sign(o.signers ?? [o.buyer]);
  return tx;
}

export const toBase64 = (tx: VersionedTransaction) => Buffer.from(tx.serialize()).toString('base64');

/** A call of the devnet node's JSON-RPC (standard or `devnet_*` methods). */
export async function solanaRpcCall<T = unknown>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result as T;
}
