import { Keypair, PublicKey, SystemProgram, TransactionInstruction } from '@solana/web3.js';
import {
  AccountLayout,
  ACCOUNT_SIZE,
  createTransferInstruction,
  getAssociatedTokenAddressSync,
  TOKEN_2022_PROGRAM_ID,
  TOKEN_PROGRAM_ID,
} from '@solana/spl-token';
import { startSolanaDevnet, type SolanaDevnet } from '../../devnet/solana-rpc';
import { base58Decode, base58Encode } from '../../src/chains/solana/base58';
import { connectSolanaRpc } from '../../src/chains/solana/rpc';
import {
  inspectExactSvmTransaction,
  MAX_COMPUTE_UNIT_LIMIT,
  MAX_COMPUTE_UNIT_PRICE,
  feeLamports,
  verifyExactSvmOnChain,
  type Inspection,
} from '../../src/schemes/solana/verify';
import { SETTLE_REASON_STATUS, settleStatusFor } from '../../src/schemes/reasons';
import { svmPaymentTransaction, toBase64, type SvmPaymentOptions } from '../support/solana';

const MINT = new PublicKey('4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU');
const feePayer = Keypair.generate();
const buyer = Keypair.generate();
const payTo = Keypair.generate().publicKey;
const AMOUNT = 10_000n;
const req = { payTo: payTo.toBase58(), asset: MINT.toBase58(), maxAmountRequired: AMOUNT.toString() };
const BLOCKHASH = base58Encode(new Uint8Array(32).fill(7));

const opts = (o: Partial<SvmPaymentOptions> = {}): SvmPaymentOptions => ({
  buyer,
  payTo,
  mint: MINT,
  feePayer: feePayer.publicKey,
  amount: AMOUNT,
  blockhash: BLOCKHASH,
  ...o,
});
/** SOLANA_MAX_FEE_LAMPORTS's default. */
const CAP = 50_000n;
const inspect = (o: Partial<SvmPaymentOptions> = {}, r = req, cap = CAP) =>
  inspectExactSvmTransaction(toBase64(svmPaymentTransaction(opts(o))), r, feePayer.publicKey, cap);
const reasonOf = (i: Inspection) => (i.ok ? 'ok' : i.reason);

describe('inspectExactSvmTransaction (pure rules, reference reason names)', () => {
  test('an x402-client payment passes: payer is the transfer authority, key is its signature', () => {
    const tx = svmPaymentTransaction(opts());
    const i = inspectExactSvmTransaction(toBase64(tx), req, feePayer.publicKey, CAP);
    expect(i.ok).toBe(true);
    if (!i.ok) return;
    expect(i.payer).toBe(buyer.publicKey.toBase58());
    expect(i.payerSignature).toBe(base58Encode(tx.signatures[1]));
    expect(i.transfer.amount).toBe(AMOUNT);
    expect(i.blockhash).toBe(BLOCKHASH);
  });

  test('Token-2022 TransferChecked to the Token-2022 ATA passes', () => {
    expect(reasonOf(inspect({ tokenProgram: TOKEN_2022_PROGRAM_ID }))).toBe('ok');
  });

  test.each([
    ['not base64', '%%%'],
    ['empty', ''],
    ['random bytes', Buffer.from('not a solana transaction at all').toString('base64')],
    ['too long', 'A'.repeat(5000)],
  ])('undecodable transaction (%s): invalid_exact_svm_payload_transaction', (_n, b64) => {
    expect(reasonOf(inspectExactSvmTransaction(b64, req, feePayer.publicKey, CAP))).toBe('invalid_exact_svm_payload_transaction');
  });

  test('trailing bytes after a valid transaction: invalid_exact_svm_payload_transaction', () => {
    const raw = Buffer.concat([Buffer.from(svmPaymentTransaction(opts()).serialize()), Buffer.from([1, 2, 3])]);
    expect(reasonOf(inspectExactSvmTransaction(raw.toString('base64'), req, feePayer.publicKey, CAP))).toBe(
      'invalid_exact_svm_payload_transaction',
    );
  });

  test('another fee payer: invalid_exact_svm_payload_fee_payer_mismatch', () => {
    const i = inspect({ feePayer: Keypair.generate().publicKey });
    expect(i).toEqual({ ok: false, reason: 'invalid_exact_svm_payload_fee_payer_mismatch', payer: buyer.publicKey.toBase58() });
  });

  test.each([
    ['two', (b: TransactionInstruction[]) => [b[1], b[2]]],
    ['four', (b: TransactionInstruction[]) => [...b, b[1]]],
  ])('%s instructions: invalid_exact_svm_payload_transaction_instructions_length', (_n, f) => {
    expect(reasonOf(inspect({ instructions: f }))).toBe('invalid_exact_svm_payload_transaction_instructions_length');
  });

  const MEMO = new PublicKey('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');
  const memo = (data: Buffer, keys: TransactionInstruction['keys'] = []) => new TransactionInstruction({ programId: MEMO, keys, data });

  test('a fourth instruction that is a Memo without accounts, as @x402/svm adds, passes', () => {
    expect(reasonOf(inspect({ instructions: (b) => [...b, memo(Buffer.from('0f'.repeat(16)))] }))).toBe('ok');
    expect(reasonOf(inspect({ instructions: (b) => [...b, memo(Buffer.alloc(256, 97))] }))).toBe('ok');
  });

  test.each([
    ['a memo over 256 bytes', () => memo(Buffer.alloc(257, 97))],
    ['a memo naming an account', () => memo(Buffer.from('hi'), [{ pubkey: payTo, isSigner: false, isWritable: true }])],
    ['another program', () => SystemProgram.transfer({ fromPubkey: buyer.publicKey, toPubkey: payTo, lamports: 1 })],
  ])('a fourth instruction that is %s: ..._instructions_length', (_n, extra) => {
    expect(reasonOf(inspect({ instructions: (b) => [...b, extra()] }))).toBe('invalid_exact_svm_payload_transaction_instructions_length');
  });

  test('first instruction not SetComputeUnitLimit, or above the cap: ..._compute_limit_instruction', () => {
    expect(reasonOf(inspect({ instructions: (b) => [b[1], b[1], b[2]] }))).toBe(
      'invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction',
    );
    expect(reasonOf(inspect({ units: MAX_COMPUTE_UNIT_LIMIT }))).toBe('ok');
    expect(reasonOf(inspect({ units: MAX_COMPUTE_UNIT_LIMIT + 1 }))).toBe(
      'invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction',
    );
  });

  test('second instruction not SetComputeUnitPrice: ..._compute_price_instruction', () => {
    expect(reasonOf(inspect({ instructions: (b) => [b[0], b[0], b[2]] }))).toBe(
      'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction',
    );
  });

  test('price above 5 lamports per CU: ..._compute_price_instruction_too_high', () => {
    const noCap = 10n ** 18n;
    expect(reasonOf(inspect({ microLamports: MAX_COMPUTE_UNIT_PRICE }, req, noCap))).toBe('ok');
    expect(reasonOf(inspect({ microLamports: MAX_COMPUTE_UNIT_PRICE + 1n }, req, noCap))).toBe(
      'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high',
    );
  });

  test('the fee payer pays at most the cap per settlement (SOLANA_MAX_FEE_LAMPORTS): ..._compute_price_instruction_too_high', () => {
    // Two signatures (10,000) plus price x limit: 200,000 CU at 200,000 micro-lamports is 40,000 more, at the cap.
    expect(feeLamports(2, 200_000n, MAX_COMPUTE_UNIT_LIMIT)).toBe(CAP);
    expect(reasonOf(inspect({ units: MAX_COMPUTE_UNIT_LIMIT, microLamports: 200_000n }))).toBe('ok');
    // One micro-lamport per unit more: within each instruction's own cap, above the total.
    expect(reasonOf(inspect({ units: MAX_COMPUTE_UNIT_LIMIT, microLamports: 200_001n }))).toBe(
      'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high',
    );
    // Before the cap, the per-instruction caps let a buyer make us pay 1,010,000 lamports per settlement.
    expect(reasonOf(inspect({ units: MAX_COMPUTE_UNIT_LIMIT, microLamports: MAX_COMPUTE_UNIT_PRICE }))).toBe(
      'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high',
    );
    expect(reasonOf(inspect({ units: MAX_COMPUTE_UNIT_LIMIT, microLamports: MAX_COMPUTE_UNIT_PRICE }, req, 1_010_000n))).toBe('ok');
  });

  test('a payment to oneself (payTo is the payer): invalid_payment_requirements', () => {
    const self = { ...req, payTo: buyer.publicKey.toBase58() };
    expect(reasonOf(inspect({ payTo: buyer.publicKey }, self))).toBe('invalid_payment_requirements');
  });

  test('third instruction of another program: ..._not_a_transfer_instruction', () => {
    const sol = SystemProgram.transfer({ fromPubkey: buyer.publicKey, toPubkey: payTo, lamports: 1 });
    expect(reasonOf(inspect({ instructions: (b) => [b[0], b[1], sol] }))).toBe(
      'invalid_exact_svm_payload_transaction_not_a_transfer_instruction',
    );
  });

  test('SPL Token Transfer (not TransferChecked): ..._not_spl_token_transfer_checked; Token-2022 likewise', () => {
    const ata = (p: PublicKey, prog: PublicKey) => getAssociatedTokenAddressSync(MINT, p, true, prog);
    const plain = (prog: PublicKey) =>
      createTransferInstruction(ata(buyer.publicKey, prog), ata(payTo, prog), buyer.publicKey, AMOUNT, [], prog);
    expect(reasonOf(inspect({ instructions: (b) => [b[0], b[1], plain(TOKEN_PROGRAM_ID)] }))).toBe(
      'invalid_exact_svm_payload_transaction_instruction_not_spl_token_transfer_checked',
    );
    expect(reasonOf(inspect({ instructions: (b) => [b[0], b[1], plain(TOKEN_2022_PROGRAM_ID)] }))).toBe(
      'invalid_exact_svm_payload_transaction_instruction_not_token_2022_transfer_checked',
    );
  });

  test('TransferChecked without its accounts: invalid_exact_svm_payload_transaction_instructions', () => {
    const truncated = (b: TransactionInstruction[]) => [b[0], b[1], new TransactionInstruction({ ...b[2], keys: b[2].keys.slice(0, 3) })];
    expect(reasonOf(inspect({ instructions: truncated, signers: [] }))).toBe('invalid_exact_svm_payload_transaction_instructions');
  });

  test('our key as transfer authority: ..._fee_payer_transferring_funds', () => {
    const i = inspect({ buyer: feePayer, signers: [feePayer] });
    expect(reasonOf(i)).toBe('invalid_exact_svm_payload_transaction_fee_payer_transferring_funds');
  });

  test('our key among any instruction accounts: ..._fee_payer_included_in_instruction_accounts', () => {
    const withUs = (b: TransactionInstruction[]) => [
      b[0],
      b[1],
      new TransactionInstruction({ ...b[2], keys: [...b[2].keys, { pubkey: feePayer.publicKey, isSigner: false, isWritable: true }] }),
    ];
    expect(reasonOf(inspect({ instructions: withUs }))).toBe(
      'invalid_exact_svm_payload_transaction_fee_payer_included_in_instruction_accounts',
    );
  });

  test('another mint: invalid_exact_svm_payload_mint_mismatch', () => {
    expect(reasonOf(inspect({ mint: Keypair.generate().publicKey }))).toBe('invalid_exact_svm_payload_mint_mismatch');
  });

  test('destination not ATA(payTo, mint): ..._transfer_to_incorrect_ata', () => {
    expect(reasonOf(inspect({ payTo: Keypair.generate().publicKey }))).toBe(
      'invalid_exact_svm_payload_transaction_transfer_to_incorrect_ata',
    );
  });

  test('amount other than maxAmountRequired (more or less): ..._amount_mismatch', () => {
    expect(reasonOf(inspect({ amount: AMOUNT + 1n }))).toBe('invalid_exact_svm_payload_transaction_amount_mismatch');
    expect(reasonOf(inspect({ amount: AMOUNT - 1n }))).toBe('invalid_exact_svm_payload_transaction_amount_mismatch');
  });

  test('payer signature missing or not over this message: invalid_exact_svm_payload_signature_invalid', () => {
    expect(reasonOf(inspect({ signers: [] }))).toBe('invalid_exact_svm_payload_signature_invalid');
    const tx = svmPaymentTransaction(opts());
    tx.signatures[1] = svmPaymentTransaction(opts({ amount: 1n })).signatures[1]; // the buyer's, for another message
    expect(reasonOf(inspectExactSvmTransaction(toBase64(tx), req, feePayer.publicKey, CAP))).toBe(
      'invalid_exact_svm_payload_signature_invalid',
    );
  });

  test('base58 round trip of keys and signatures', () => {
    const k = Keypair.generate().publicKey;
    expect(base58Encode(k.toBytes())).toBe(k.toBase58());
    expect(Buffer.from(base58Decode(k.toBase58())).equals(k.toBuffer())).toBe(true);
    expect(base58Encode(new Uint8Array([0, 0, 1]))).toBe('112');
  });
});

describe('verifyExactSvmOnChain (against the litesvm devnet node through the production RPC client)', () => {
  let dn: SolanaDevnet;
  const rpc = () => connectSolanaRpc(dn.url);
  beforeAll(async () => {
    dn = await startSolanaDevnet({ usdcMint: MINT.toBase58(), feePayers: [feePayer.publicKey] });
    dn.ledger.fundToken(buyer.publicKey, 1_000_000n);
    dn.ledger.fundToken(payTo, 0n);
  });
  afterAll(() => dn.stop());

  const check = async (o: Partial<SvmPaymentOptions> = {}, r = req) => {
    const i = inspectExactSvmTransaction(
      toBase64(svmPaymentTransaction(opts({ blockhash: dn.ledger.latestBlockhash().blockhash, ...o }))),
      r,
      feePayer.publicKey,
      CAP,
    );
    if (!i.ok) throw new Error(`inspection failed: ${i.reason}`);
    return verifyExactSvmOnChain(i, rpc(), feePayer.publicKey);
  };

  test('a funded buyer paying an existing ATA is valid', async () => {
    await expect(check()).resolves.toEqual({ isValid: true });
  });

  test('unknown or expired blockhash: settle_exact_svm_block_height_exceeded', async () => {
    await expect(check({ blockhash: BLOCKHASH })).resolves.toEqual({
      isValid: false,
      invalidReason: 'settle_exact_svm_block_height_exceeded',
    });
  });

  test('buyer without a token account: ..._sender_ata_not_found', async () => {
    await expect(check({ buyer: Keypair.generate() })).resolves.toEqual({
      isValid: false,
      invalidReason: 'invalid_exact_svm_payload_transaction_sender_ata_not_found',
    });
  });

  test('payTo without a token account: ..._receiver_ata_not_found', async () => {
    const other = Keypair.generate().publicKey;
    await expect(check({ payTo: other }, { ...req, payTo: other.toBase58() })).resolves.toEqual({
      isValid: false,
      invalidReason: 'invalid_exact_svm_payload_transaction_receiver_ata_not_found',
    });
  });

  test('balance below the amount: insufficient_funds', async () => {
    const poor = Keypair.generate();
    dn.ledger.fundToken(poor.publicKey, AMOUNT - 1n);
    await expect(check({ buyer: poor })).resolves.toEqual({ isValid: false, invalidReason: 'insufficient_funds' });
  });

  test('wrong decimals (the runtime refuses it): ..._simulation_failed', async () => {
    await expect(check({ decimals: 5 })).resolves.toEqual({
      isValid: false,
      invalidReason: 'invalid_exact_svm_payload_transaction_simulation_failed',
    });
  });

  test('source is a token account of our key spent through a delegate: ..._fee_payer_transferring_funds', async () => {
    const ours = getAssociatedTokenAddressSync(MINT, feePayer.publicKey, true);
    const data = Buffer.alloc(ACCOUNT_SIZE);
    AccountLayout.encode(
      {
        mint: MINT,
        owner: feePayer.publicKey,
        amount: 1_000_000n,
        delegateOption: 1,
        delegate: buyer.publicKey,
        state: 1,
        isNativeOption: 0,
        isNative: 0n,
        delegatedAmount: 1_000_000n,
        closeAuthorityOption: 0,
        closeAuthority: PublicKey.default,
      },
      data,
    );
    dn.ledger.svm.setAccount(ours, { lamports: 2_039_280, data, owner: TOKEN_PROGRAM_ID, executable: false, rentEpoch: 0 });
    const fromOurs = (b: TransactionInstruction[]) => [
      b[0],
      b[1],
      new TransactionInstruction({ ...b[2], keys: [{ ...b[2].keys[0], pubkey: ours }, ...b[2].keys.slice(1)] }),
    ];
    await expect(check({ instructions: fromOurs })).resolves.toEqual({
      isValid: false,
      invalidReason: 'invalid_exact_svm_payload_transaction_fee_payer_transferring_funds',
    });
  });
});

test('every Solana reason answers 400 on settle (insufficient_funds stays 402)', () => {
  const svm = Object.keys(SETTLE_REASON_STATUS).filter((r) => r.includes('_svm_'));
  expect(svm).toHaveLength(20);
  expect(svm.map(settleStatusFor)).toEqual(svm.map(() => 400));
  expect(settleStatusFor('insufficient_funds')).toBe(402);
});
