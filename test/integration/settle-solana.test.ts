import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Connection, Keypair, PublicKey, VersionedTransaction } from '@solana/web3.js';
// x402-fetch's types are reachable only through its exports map, which our `node` module resolution ignores.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- see the line above
const { createSigner, decodeXPaymentResponse, wrapFetchWithPayment } = require('x402-fetch') as typeof import('x402-fetch/dist/cjs/index');
import { getAssociatedTokenAddressSync } from '@solana/spl-token';
import { base58Encode } from '../../src/chains/solana/base58';
import { DEVNET_SOLANA_FEE_PAYER } from '../../src/chains/solana/fee-payer';
import { buildSolanaNetworkTable } from '../../src/chains/networks';
import { Settlement, SolanaTransaction } from '../../src/db/entities';
import { solanaSettleWorkflowId } from '../../src/temporal/workflow-ids';
import { oneDbKind } from '../support/db';
import { request } from '../support/http';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { solanaRpcCall, svmPaymentTransaction, toBase64, type SvmPaymentOptions } from '../support/solana';

const USDC = new PublicKey(buildSolanaNetworkTable({}).get('solana-devnet')!.usdc);
const AMOUNT = 1_000_000n;
const UNITS = 20_000;
const MICRO_LAMPORTS = 1_000;
/** What the fee payer pays per settlement: 2 signatures x 5000 + ceil(price x limit / 1e6). */
const FEE = 2 * 5000 + Math.ceil((UNITS * MICRO_LAMPORTS) / 1e6);

/**
 * POST /v1/settle for `solana-devnet` on the real stack: Temporal, a worker process, the database,
 * and the litesvm-backed Solana devnet node reached over JSON-RPC. The buyer builds and partially
 * signs its transaction as the x402 SVM client does, with the fee payer taken from /v1/supported.
 */
describe.each(oneDbKind('sqlite'))('Solana settlement (%s)', (kind) => {
  let h: SettleHarness;
  let rpcUrl: string;
  let conn: Connection;
  let feePayer: PublicKey;
  let payTo: PublicKey;

  beforeAll(async () => {
    h = await startSettleHarness(kind, { relayerIndex: 3, env: { SETTLE_WAIT_MS: '1500', RECEIPT_WAIT_MS: '5000' } });
    rpcUrl = h.stack.solana.rpcUrl;
    conn = new Connection(rpcUrl, 'confirmed');
    const supported = await request('GET', `${h.api.baseUrl}/v1/supported`);
    const kindSvm = supported.body.kinds.find((k: { network: string }) => k.network === 'solana-devnet');
    expect(kindSvm).toEqual({
      x402Version: 1,
      scheme: 'exact',
      network: 'solana-devnet',
      extra: { feePayer: DEVNET_SOLANA_FEE_PAYER.publicKey.toBase58() },
    });
    feePayer = new PublicKey(kindSvm.extra.feePayer);
    payTo = Keypair.generate().publicKey;
    await solanaRpcCall(rpcUrl, 'devnet_fundToken', [payTo.toBase58(), 0]); // the seller's USDC account exists
  });
  afterAll(async () => {
    await solanaRpcCall(rpcUrl, 'devnet_hold', [false]).catch(() => undefined);
    await h?.close();
  });

  const newBuyer = async (usdc = 5_000_000n) => {
    const buyer = Keypair.generate();
    await solanaRpcCall(rpcUrl, 'devnet_fundToken', [buyer.publicKey.toBase58(), Number(usdc)]);
    return buyer;
  };
  const requirements = (o: Record<string, unknown> = {}) => ({
    scheme: 'exact',
    network: 'solana-devnet',
    maxAmountRequired: AMOUNT.toString(),
    resource: 'https://seller.example/weather',
    description: 'weather',
    mimeType: 'application/json',
    payTo: payTo.toBase58(),
    maxTimeoutSeconds: 60,
    asset: USDC.toBase58(),
    extra: { feePayer: feePayer.toBase58() },
    ...o,
  });
  const buildTx = async (buyer: Keypair, o: Partial<SvmPaymentOptions> = {}) =>
    svmPaymentTransaction({
      buyer,
      payTo,
      mint: USDC,
      feePayer,
      amount: AMOUNT,
      blockhash: (await conn.getLatestBlockhash()).blockhash,
      units: UNITS,
      microLamports: MICRO_LAMPORTS,
      ...o,
    });
  const bodyOf = (tx: VersionedTransaction, req = requirements()) => ({
    paymentPayload: { x402Version: 1, scheme: 'exact', network: 'solana-devnet', payload: { transaction: toBase64(tx) } },
    paymentRequirements: req,
  });
  /** The signature our co-signed transaction will have (the devnet fee payer key is public by design). */
  const expectedSignature = (tx: VersionedTransaction) => {
    const copy = svmCopy(tx);
    copy.sign([DEVNET_SOLANA_FEE_PAYER]);
    return base58Encode(copy.signatures[0]);
  };
  const usdcOf = async (owner: PublicKey) => {
    const info = await conn.getAccountInfo(getAssociatedTokenAddressSync(USDC, owner, true));
    return info ? BigInt((await conn.getTokenAccountBalance(getAssociatedTokenAddressSync(USDC, owner, true))).value.amount) : null;
  };

  test('settles: buyer pays payTo exactly, our key pays only the fee, repeats get the same answer', async () => {
    const buyer = await newBuyer();
    const tx = await buildTx(buyer);
    const body = bodyOf(tx);
    const [buyerBefore, payToBefore, feeBefore] = [await usdcOf(buyer.publicKey), await usdcOf(payTo), await conn.getBalance(feePayer)];

    const res = await h.settle(body);
    const signature = expectedSignature(tx);
    expect({ status: res.status, body: res.body }).toEqual({
      status: 200,
      body: { success: true, transaction: signature, network: 'solana-devnet', payer: buyer.publicKey.toBase58() },
    });
    expect(await usdcOf(buyer.publicKey)).toBe(buyerBefore! - AMOUNT);
    expect(await usdcOf(payTo)).toBe(payToBefore! + AMOUNT);
    expect(await conn.getBalance(feePayer)).toBe(feeBefore - FEE);
    expect(await usdcOf(feePayer)).toBeNull(); // our key holds and moves no tokens
    const status = (await conn.getSignatureStatuses([signature])).value[0];
    expect(status).toMatchObject({ err: null, confirmationStatus: 'finalized' });

    const again = await h.settle(body);
    expect({ status: again.status, body: again.body }).toEqual({ status: res.status, body: res.body });
    expect(await usdcOf(buyer.publicKey)).toBe(buyerBefore! - AMOUNT);
    expect(await conn.getBalance(feePayer)).toBe(feeBefore - FEE);

    const workflowId = solanaSettleWorkflowId('solana-devnet', buyer.publicKey.toBase58(), base58Encode(tx.signatures[1]));
    const row = await h.tdb.db.em.fork().findOneOrFail(Settlement, { id: workflowId });
    expect(row).toMatchObject({
      route: 'solana',
      network: 'solana-devnet',
      state: 'settled',
      transaction: signature,
      payer: buyer.publicKey.toBase58(),
      recipient: payTo.toBase58(),
      amount: AMOUNT.toString(),
      fee: '0',
    });
  });

  test('the same payment sent 5 times at once settles once', async () => {
    const buyer = await newBuyer();
    const tx = await buildTx(buyer);
    const [buyerBefore, feeBefore] = [await usdcOf(buyer.publicKey), await conn.getBalance(feePayer)];
    const answers = await Promise.all(Array.from({ length: 5 }, () => h.settleUntilFinal(bodyOf(tx))));
    const expected = {
      status: 200,
      body: { success: true, transaction: expectedSignature(tx), network: 'solana-devnet', payer: buyer.publicKey.toBase58() },
    };
    expect(answers.map((a) => ({ status: a.status, body: a.body }))).toEqual(Array(5).fill(expected));
    expect(await usdcOf(buyer.publicKey)).toBe(buyerBefore! - AMOUNT);
    expect(await conn.getBalance(feePayer)).toBe(feeBefore - FEE);
  });

  test('a real x402 v1 client (x402-fetch) pays a seller that settles here', async () => {
    const buyer = await newBuyer();
    const [buyerBefore, payToBefore] = [await usdcOf(buyer.publicKey), await usdcOf(payTo)];
    // The seller: 402 with its requirements, then settles the X-PAYMENT it receives with us.
    const seller = http.createServer((req, res) => {
      const paid = req.headers['x-payment'];
      const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      };
      if (typeof paid !== 'string') return send(402, { x402Version: 1, error: 'X-PAYMENT header is required', accepts: [requirements()] });
      const paymentPayload = JSON.parse(Buffer.from(paid, 'base64').toString('utf8'));
      h.settle({ paymentPayload, paymentRequirements: requirements() }).then((settled) =>
        settled.status === 200
          ? send(200, { weather: 'sunny' }, { 'X-PAYMENT-RESPONSE': Buffer.from(JSON.stringify(settled.body)).toString('base64') })
          : send(402, { x402Version: 1, error: settled.body.errorReason, accepts: [requirements()] }),
      );
    });
    await new Promise<void>((r) => seller.listen(0, '127.0.0.1', r));
    try {
      const signer = await createSigner('solana-devnet', base58Encode(buyer.secretKey));
      const payingFetch = wrapFetchWithPayment(fetch, signer, AMOUNT, undefined, { svmConfig: { rpcUrl } });
      const res = await payingFetch(`http://127.0.0.1:${(seller.address() as AddressInfo).port}/weather`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ weather: 'sunny' });
      const receipt = decodeXPaymentResponse(res.headers.get('x-payment-response')!);
      expect(receipt).toEqual({
        success: true,
        transaction: expect.stringMatching(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/),
        network: 'solana-devnet',
        payer: buyer.publicKey.toBase58(),
      });
      expect((await conn.getSignatureStatuses([receipt.transaction])).value[0]).toMatchObject({ err: null });
      expect(await usdcOf(buyer.publicKey)).toBe(buyerBefore! - AMOUNT);
      expect(await usdcOf(payTo)).toBe(payToBefore! + AMOUNT);
    } finally {
      await new Promise((r) => seller.close(r));
    }
  });

  test('rejections: exact bodies, nothing moves', async () => {
    const buyer = await newBuyer();
    const payer = buyer.publicKey.toBase58();
    const before = await usdcOf(buyer.publicKey);
    const fail = (errorReason: string, p: string | null = payer, network = 'solana-devnet') => ({
      success: false,
      errorReason,
      transaction: '',
      network,
      ...(p ? { payer: p } : {}),
    });
    const cases: [string, () => Promise<unknown>, number, unknown][] = [
      [
        'amount',
        async () => bodyOf(await buildTx(buyer, { amount: AMOUNT - 1n })),
        400,
        fail('invalid_exact_svm_payload_transaction_amount_mismatch'),
      ],
      [
        'fee payer',
        async () => bodyOf(await buildTx(buyer, { feePayer: Keypair.generate().publicKey })),
        400,
        fail('invalid_exact_svm_payload_fee_payer_mismatch'),
      ],
      [
        'extra.feePayer',
        async () => bodyOf(await buildTx(buyer), requirements({ extra: { feePayer: Keypair.generate().publicKey.toBase58() } })),
        400,
        fail('invalid_exact_svm_payload_fee_payer_mismatch', null),
      ],
      ['unsigned', async () => bodyOf(await buildTx(buyer, { signers: [] })), 400, fail('invalid_exact_svm_payload_signature_invalid')],
      [
        'garbage',
        async () => ({
          ...bodyOf(await buildTx(buyer)),
          paymentPayload: { x402Version: 1, scheme: 'exact', network: 'solana-devnet', payload: { transaction: 'AAAA' } },
        }),
        400,
        fail('invalid_exact_svm_payload_transaction', null),
      ],
      [
        'other asset',
        async () => bodyOf(await buildTx(buyer), requirements({ asset: Keypair.generate().publicKey.toBase58() })),
        400,
        fail('invalid_payment_requirements', null),
      ],
      [
        'cross-chain',
        async () => bodyOf(await buildTx(buyer), requirements({ network: 'base-sepolia' })),
        400,
        fail('invalid_network', null),
      ],
      ['upto', async () => bodyOf(await buildTx(buyer), requirements({ scheme: 'upto' })), 400, fail('unsupported_scheme', null)],
      [
        'no payload',
        async () => ({
          paymentPayload: { x402Version: 1, scheme: 'exact', network: 'solana-devnet', payload: {} },
          paymentRequirements: requirements(),
        }),
        400,
        fail('invalid_payload', null),
      ],
      [
        'evm payTo',
        async () => bodyOf(await buildTx(buyer), requirements({ payTo: '0x0000000000000000000000000000000000000001' })),
        400,
        fail('invalid_payment_requirements', null),
      ],
      // Rules the cluster answers, from the workflow's verification.
      [
        'no receiver ATA',
        async () => {
          const other = Keypair.generate().publicKey;
          return bodyOf(await buildTx(buyer, { payTo: other }), requirements({ payTo: other.toBase58() }));
        },
        400,
        fail('invalid_exact_svm_payload_transaction_receiver_ata_not_found'),
      ],
      ['poor buyer', async () => bodyOf(await buildTx(await newBuyer(AMOUNT - 1n))), 402, 'insufficient_funds'],
      [
        'decimals',
        async () => bodyOf(await buildTx(buyer, { decimals: 2 })),
        400,
        fail('invalid_exact_svm_payload_transaction_simulation_failed'),
      ],
    ];
    for (const [name, build, status, expected] of cases) {
      const res = await h.settle(await build());
      const want =
        typeof expected === 'string'
          ? { success: false, errorReason: expected, transaction: '', network: 'solana-devnet', payer: expect.any(String) }
          : expected;
      expect({ name, status: res.status, body: res.body }).toEqual({ name, status, body: want });
    }
    expect(await usdcOf(buyer.publicKey)).toBe(before);

    // Mainnet with a test key: 403 before anything else is said about the network.
    const main = await h.settle({
      ...bodyOf(await buildTx(buyer), requirements({ network: 'solana' })),
      paymentPayload: { x402Version: 1, scheme: 'exact', network: 'solana', payload: { transaction: 'AAAA' } },
    });
    expect({ status: main.status, body: main.body }).toEqual({
      status: 403,
      body: { type: 'api_error', code: 403, message: expect.any(String) },
    });
  });

  test("the recipient rule: payTo must be the organization's Solana payout wallet once one is set; no cut is taken (issue 14)", async () => {
    const wallet = Keypair.generate().publicKey;
    await solanaRpcCall(rpcUrl, 'devnet_fundToken', [wallet.toBase58(), 0]);
    const setWallet = (payoutWalletSolanaTest: string | null) =>
      request('PATCH', `${h.api.baseUrl}/v1/organization`, { cookie: h.cookie, json: { payoutWalletSolanaTest } });
    expect((await setWallet(wallet.toBase58())).body).toMatchObject({
      payoutWalletSolanaTest: wallet.toBase58(),
      payoutWalletSolanaLive: null,
    });
    try {
      const buyer = await newBuyer();
      const payer = buyer.publicKey.toBase58();
      const refused = (errorMessage: string, withPayer = true) => ({
        status: 400,
        body: {
          success: false,
          errorReason: 'invalid_payment_requirements',
          errorMessage,
          transaction: '',
          network: 'solana-devnet',
          ...(withPayer ? { payer } : {}),
        },
      });
      const before = { buyer: await usdcOf(buyer.publicKey), payTo: await usdcOf(payTo), wallet: await usdcOf(wallet) };

      // The suite's payTo is not the organization's wallet any more.
      const other = await h.settle(bodyOf(await buildTx(buyer)));
      expect({ status: other.status, body: other.body }).toEqual(
        refused(`payTo must be the organization's Solana payout wallet ${wallet.toBase58()}`),
      );
      // A cut or another end recipient cannot be paid from the buyer's own transfer.
      const tx = await buildTx(buyer, { payTo: wallet });
      const cut = await h.settle(
        bodyOf(
          tx,
          requirements({ payTo: wallet.toBase58(), extra: { feePayer: feePayer.toBase58(), platform: payer, platformFeeBps: 100 } }),
        ),
      );
      expect({ status: cut.status, body: cut.body }).toEqual(
        refused('extra.platformFeeBps is not applied on Solana: the buyer pays payTo directly', false),
      );
      const credited = await h.settle(
        bodyOf(tx, requirements({ payTo: wallet.toBase58(), extra: { feePayer: feePayer.toBase58(), creditedRecipient: payer } })),
      );
      expect({ status: credited.status, body: credited.body }).toEqual(
        refused('extra.creditedRecipient must equal payTo on Solana: the buyer pays payTo directly', false),
      );
      expect(await usdcOf(buyer.publicKey)).toBe(before.buyer);

      // Paying the organization's wallet settles: the whole amount, no fee.
      const ok = await h.settleUntilFinal(bodyOf(tx, requirements({ payTo: wallet.toBase58() })));
      expect({ status: ok.status, success: ok.body.success }).toEqual({ status: 200, success: true });
      expect(await usdcOf(buyer.publicKey)).toBe(before.buyer! - AMOUNT);
      expect(await usdcOf(wallet)).toBe(before.wallet! + AMOUNT);
      expect(await usdcOf(payTo)).toBe(before.payTo);
    } finally {
      expect((await setWallet(null)).status).toBe(200);
    }
  });

  test('a blockhash that expired before settle is refused; one that expires unlanded after broadcast ends failed', async () => {
    const buyer = await newBuyer();
    const before = await usdcOf(buyer.publicKey);
    const stale = await buildTx(buyer);
    await solanaRpcCall(rpcUrl, 'devnet_expireBlockhashes');
    const refused = await h.settle(bodyOf(stale));
    expect({ status: refused.status, body: refused.body }).toEqual({
      status: 400,
      body: {
        success: false,
        errorReason: 'settle_exact_svm_block_height_exceeded',
        transaction: '',
        network: 'solana-devnet',
        payer: buyer.publicKey.toBase58(),
      },
    });

    const tx = await buildTx(buyer);
    await solanaRpcCall(rpcUrl, 'devnet_hold', [true]);
    const pending = await h.settleUntilBroadcast(bodyOf(tx));
    expect(pending.body.transaction).toBe(expectedSignature(tx));
    await solanaRpcCall(rpcUrl, 'devnet_expireBlockhashes');
    await solanaRpcCall(rpcUrl, 'devnet_hold', [false]); // the held transaction is dropped: it can never land
    const final = await h.settleUntilFinal(bodyOf(tx));
    expect({ status: final.status, body: final.body }).toEqual({
      status: 400,
      body: {
        success: false,
        errorReason: 'settle_exact_svm_block_height_exceeded',
        transaction: '',
        network: 'solana-devnet',
        payer: buyer.publicKey.toBase58(),
      },
    });
    expect(await usdcOf(buyer.publicKey)).toBe(before);
    expect((await conn.getSignatureStatuses([expectedSignature(tx)])).value[0]).toBeNull();
  });

  test('worker killed after broadcast, before confirmation: one transaction, one transfer, the same answer', async () => {
    const buyer = await newBuyer();
    const tx = await buildTx(buyer);
    const body = bodyOf(tx);
    const signature = expectedSignature(tx);
    const [buyerBefore, payToBefore, feeBefore] = [await usdcOf(buyer.publicKey), await usdcOf(payTo), await conn.getBalance(feePayer)];

    await solanaRpcCall(rpcUrl, 'devnet_hold', [true]); // the node accepts but does not process yet
    const pending = await h.settleUntilBroadcast(body);
    expect({ status: pending.status, body: pending.body }).toEqual({
      status: 202,
      body: {
        success: false,
        errorReason: 'settlement_pending',
        transaction: signature,
        network: 'solana-devnet',
        payer: buyer.publicKey.toBase58(),
      },
    });
    expect((await conn.getSignatureStatuses([signature])).value[0]).toBeNull(); // broadcast, not landed

    const killed = h.worker.child.pid!;
    await h.restartWorker({ kill: true });
    expect(() => process.kill(killed, 0)).toThrow();
    const repeat = await h.settle(body);
    expect(repeat.status).toBe(202);
    expect(repeat.body.transaction).toBe(signature);

    await solanaRpcCall(rpcUrl, 'devnet_hold', [false]);
    const final = await h.settleUntilFinal(body);
    expect({ status: final.status, body: final.body }).toEqual({
      status: 200,
      body: { success: true, transaction: signature, network: 'solana-devnet', payer: buyer.publicKey.toBase58() },
    });
    expect(await usdcOf(buyer.publicKey)).toBe(buyerBefore! - AMOUNT);
    expect(await usdcOf(payTo)).toBe(payToBefore! + AMOUNT);
    expect(await conn.getBalance(feePayer)).toBe(feeBefore - FEE); // one transaction's fee: one transaction
    const workflowId = solanaSettleWorkflowId('solana-devnet', buyer.publicKey.toBase58(), base58Encode(tx.signatures[1]));
    const recorded = await h.tdb.db.em.fork().find(SolanaTransaction, { id: { $like: `${workflowId}%` } });
    expect(recorded.map((r) => r.signature)).toEqual([signature]);
  });
  test('a restarted worker re-sends the stored transaction the node lost: same signature, one transfer', async () => {
    const buyer = await newBuyer();
    const tx = await buildTx(buyer);
    const body = bodyOf(tx);
    const signature = expectedSignature(tx);
    const [buyerBefore, feeBefore] = [await usdcOf(buyer.publicKey), await conn.getBalance(feePayer)];

    await solanaRpcCall(rpcUrl, 'devnet_hold', [true]);
    const pending = await h.settleUntilBroadcast(body);
    expect(pending.body.transaction).toBe(signature);
    await h.restartWorker({ kill: true });
    await solanaRpcCall(rpcUrl, 'devnet_dropHeld'); // the node forgets it
    await solanaRpcCall(rpcUrl, 'devnet_hold', [false]);
    expect((await conn.getSignatureStatuses([signature])).value[0]).toBeNull();

    const final = await h.settleUntilFinal(body);
    expect({ status: final.status, body: final.body }).toEqual({
      status: 200,
      body: { success: true, transaction: signature, network: 'solana-devnet', payer: buyer.publicKey.toBase58() },
    });
    expect(await usdcOf(buyer.publicKey)).toBe(buyerBefore! - AMOUNT);
    expect(await conn.getBalance(feePayer)).toBe(feeBefore - FEE);
  });
});

/** An independent copy (signing must not touch the buyer's transaction object). */
function svmCopy(tx: VersionedTransaction): VersionedTransaction {
  return VersionedTransaction.deserialize(tx.serialize());
}
