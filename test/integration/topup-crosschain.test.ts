import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPublicClient, createWalletClient, http, parseEventLogs, type Address, type LocalAccount, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { attesterChainsFrom, startBridgeAttester, type BridgeAttester } from '../../devnet/bridge-attester';
import { waitUntil } from '../../devnet/process';
import { mainnetDevnetEnv } from '../../devnet/start-topup';
import { exactPayer, x402Fetch } from '../../devnet/x402-v2-client';
import { buildNetworkTable } from '../../src/chains/networks';
import { BridgeTransfer } from '../../src/db/bridge-transfer';
import { RelayerTransaction, TopUp } from '../../src/db/entities';
import { createLogger } from '../../src/logger';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { createTopupApp } from '../../src/topup/app';
import { X402Kind, X402State } from '../../src/temporal/search-attributes';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { waitForReceipt } from '../support/evm';
import { request, type JsonResponse } from '../support/http';
import { exactPayment } from '../support/payments';
import { startTopupHarness, type TopupHarness } from '../support/topup-harness';
import { facilitatorAbi, tokenAbi } from '../../src/chains/evm/abi';

const { decodePaymentResponseHeader, wrapFetchWithPayment } = x402Fetch;

/**
 * Cross-chain top-ups (spec "Top-up gateway", "States and transitions"): a payer signs on `optimism`
 * (devnet chain 10), the gateway settles it through the cross-chain settlement (burn on optimism,
 * mint and payout to the gateway relayer on `base`, 8453) and deposits exactly what arrived on the
 * merchant contract. This file's own attester double withholds attestations to hold a top-up in
 * `bridging`.
 */
const FEE_FIXED = 10_000n;
const FEE_BPS = 30n;
const fee = (gross: bigint) => FEE_FIXED + (gross * FEE_BPS) / 10_000n;
/** The bridge's fee of a standard transfer: none (Circle charges fast transfers only; so does the devnet's attester). */
const BRIDGE_FEE = 0n;
/** The quoted bridge fee: TOPUP_BRIDGE_FEE_FALLBACK 50,000 + 20 % buffer. */
const QUOTED_BRIDGE_FEE = 60_000n;
const OPTIMISM_DOMAIN = 2;

describe.each(oneDbKind('postgres'))('cross-chain top-ups (%s)', (kind) => {
  let h: TopupHarness;
  let attester: BridgeAttester;
  let op: PublicClient;
  let opWallet: (a: LocalAccount) => ReturnType<typeof createWalletClient>;

  beforeAll(async () => {
    const stack = (await import('../support/stack-info')).readStackInfo();
    const chains = mainnetDevnetEnv(stack.chains.base.rpcUrl, stack.chains.optimism.rpcUrl);
    attester = await startBridgeAttester({
      chains: attesterChainsFrom({ ...chains, RPC_URLS_BASE_SEPOLIA: 'none', RPC_URLS_OPTIMISM_SEPOLIA: 'none' }),
    });
    h = await startTopupHarness(kind, {
      relayerIndex: 2,
      env: {
        ...chains,
        TOPUP_SOURCES: 'base,optimism,ink',
        BRIDGE_ATTESTATION_URL: attester.url,
        TOPUP_WAIT_MS: '1500',
        TOPUP_RETRY_AFTER_SECONDS: '2',
        RECEIPT_WAIT_MS: '3000',
      },
    });
    op = createPublicClient({ transport: http(stack.chains.optimism.rpcUrl) }) as PublicClient;
    const opChain = {
      id: 10,
      name: 'optimism-devnet',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [stack.chains.optimism.rpcUrl] } },
    } as const;
    opWallet = (a) => createWalletClient({ account: a, chain: opChain, transport: http(stack.chains.optimism.rpcUrl) });
  });
  afterAll(async () => {
    await h?.close();
    await attester?.stop();
  });
  beforeEach(() => attester.release());

  /** A fresh payer holding `usdc` on optimism (and nothing on base). */
  const opPayer = async (usdc = 20_000_000n) => {
    const payer = privateKeyToAccount(generatePrivateKey());
    const hash = await opWallet(TEST_ACCOUNTS.buyers[0]).writeContract({
      address: h.stack.usdc,
      abi: tokenAbi,
      functionName: 'transfer',
      args: [payer.address, usdc],
      chain: undefined,
      account: TEST_ACCOUNTS.buyers[0],
    });
    await waitForReceipt(op, hash);
    return payer;
  };
  const opUsdc = (who: Address) => op.readContract({ address: h.stack.usdc, abi: tokenAbi, functionName: 'balanceOf', args: [who] });
  const opPayment = async (payer: LocalAccount, value: bigint) => {
    const body = await exactPayment({
      buyer: payer,
      network: 'optimism',
      chainId: 10,
      usdc: h.stack.usdc,
      facilitator: h.stack.facilitator,
      value,
      extra: { name: 'USDC', version: '2', destinationChainId: 8453 },
    });
    return Buffer.from(JSON.stringify(body.paymentPayload)).toString('base64');
  };
  /** BridgePayout events of optimism burns on base (each is one mint + payout). */
  const payoutsOn = async (bridgeNonce: string) => {
    const logs = await h.chain.getLogs({ address: h.stack.facilitator, fromBlock: 0n, toBlock: 'latest' });
    return parseEventLogs({ abi: facilitatorAbi, logs, eventName: 'BridgePayout' }).filter(
      (l) => l.args.sourceDomain === OPTIMISM_DOMAIN && l.args.bridgeNonce === bridgeNonce,
    );
  };
  /** Polls the record as its payer `as` (the whole record). */
  const poll = (id: string, state: string, as: LocalAccount, timeoutMs = 60_000) =>
    waitUntil(
      `top-up ${state}`,
      async () => {
        const res = await h.get(`/v1/demo-merchant/topups/${id}`, { as });
        return res.body.state === state ? res : undefined;
      },
      { timeoutMs, intervalMs: 250 },
    );

  test('quote and challenge: optimism is a source with the buffered bridge fee in its minimum; ink is not (not configured here)', async () => {
    const buyer = (await opPayer(0n)).address;
    const q = (query: string) => h.get(`/v1/demo-merchant/topups/quote?buyer=${buyer}&${query}`);
    // min: the smallest gross whose net after 0.01 USDC + 0.30 % + 60,000 (quoted bridge fee) is 1 USDC.
    expect(1_073_219n - fee(1_073_219n) - QUOTED_BRIDGE_FEE).toBe(1_000_000n);
    const quote = await q('network=optimism');
    expect(quote.status).toBe(200);
    expect(quote.body).toEqual({
      buyer,
      amount: null,
      minAmount: '1073219',
      // max: the bridge may keep less than quoted, so the headroom bound counts no bridge fee (= base's).
      maxAmount: '1003019057',
      balance: '0',
      creditLimit: '1000000000',
      headroom: '1000000000',
      minBuyerDeposit: '1000000',
      requirements: {
        scheme: 'exact',
        network: 'optimism',
        maxAmountRequired: '1003019057',
        resource: `${h.url}/v1/demo-merchant/topups`,
        description: 'Top-up of your demo-merchant balance',
        mimeType: 'application/json',
        payTo: h.stack.facilitator,
        maxTimeoutSeconds: 300,
        asset: h.stack.usdc,
        extra: { name: 'USDC', version: '2', destinationChainId: 8453 },
      },
      sources: [
        { network: 'base', evmChainId: 8453, minAmount: '1013039', maxAmount: '1003019057' },
        { network: 'optimism', evmChainId: 10, minAmount: '1073219', maxAmount: '1003019057' },
      ],
    });
    expect(await q('network=optimism&amount=1073218')).toMatchObject({ status: 400, body: { errorReason: 'amount_too_low' } });
    expect((await q('network=optimism&amount=1073219')).status).toBe(200);
    expect(await q('network=optimism&amount=1003019058')).toMatchObject({ status: 409, body: { errorReason: 'credit_limit_reached' } });
    // ink is listed in TOPUP_SOURCES but has no RPC or token here (topup-sources.test.ts serves it).
    expect(await q('network=ink')).toMatchObject({
      status: 400,
      body: { errorReason: 'wrong_network', error: 'network ink is not configured on this gateway' },
    });

    const challenge = await h.post({ buyer, amount: '5000000' });
    expect(challenge.status).toBe(402);
    expect(challenge.body.accepts.map((a: any) => [a.network, a.maxAmountRequired, a.extra])).toEqual([
      ['base', '5000000', { name: 'USDC', version: '2' }],
      ['optimism', '5000000', { name: 'USDC', version: '2', destinationChainId: 8453 }],
    ]);
    expect(challenge.body.topup.sources.map((s: any) => s.network)).toEqual(['base', 'optimism']);
  });

  test('bridging: 503 + Retry-After until the fill, a worker SIGKILLed while bridging, then exactly one mint and one deposit of the exact net', async () => {
    const gross = 5_000_000n;
    const net = gross - fee(gross) - BRIDGE_FEE;
    expect(net).toBe(4_975_000n);
    const payer = await opPayer();
    const header = await opPayment(payer, gross);
    const opBefore = await opUsdc(payer.address);
    const relayerBefore = await h.usdcOf(h.relayer.address);
    const feeBefore = await h.usdcOf(h.feeRecipient);
    attester.hold();

    const first = await h.post({}, header);
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('2');
    const topupId: string = first.body.topupId;
    expect(topupId).toMatch(/^topup:demo-merchant:/);
    // GET answers the record in any state (200); the paid POST answers 503 while it is not final.
    const bridging = await poll(topupId, 'bridging', payer);
    expect(bridging.status).toBe(200);
    expect(bridging.body).toMatchObject({
      success: false,
      topupId,
      state: 'bridging',
      network: 'optimism',
      sourceNetwork: 'optimism',
      grossAmount: '5000000',
      settlementTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      fillTx: null,
      depositTx: null,
    });
    // The payer was debited on optimism by the burn.
    expect(await opUsdc(payer.address)).toBe(opBefore - gross);
    const repeat = await h.post({}, header);
    expect(repeat.status).toBe(503);
    expect(repeat.headers.get('retry-after')).toBe('2');
    expect(repeat.body).toMatchObject({
      topupId,
      state: 'bridging',
      errorReason: 'bridging',
      settlementTx: bridging.body.settlementTx,
      fillTx: null,
    });

    const killed = h.worker.child.pid!;
    await h.restartWorker({ kill: true });
    expect(() => process.kill(killed, 0)).toThrow();
    attester.release();

    const { final: done, before: interim } = await h.repeatUntil(header, 200, 90_000);
    // Every repeat before the final 200 answered 503 (bridging): no interim error across the kill.
    expect(interim.filter((s) => s !== 503)).toEqual([]);
    expect(done.body).toMatchObject({
      success: true,
      topupId,
      state: 'deposited',
      grossAmount: '5000000',
      netAmount: net.toString(),
      settlementTx: bridging.body.settlementTx,
      fillTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      depositTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(JSON.parse(Buffer.from(done.headers.get('x-payment-response')!, 'base64').toString())).toEqual({
      success: true,
      transaction: bridging.body.settlementTx,
      network: 'optimism',
      payer: payer.address,
    });
    expect((await h.get(`/v1/demo-merchant/topups/${topupId}`, { as: payer })).body).toEqual(done.body);

    // Exact amounts: merchant credit = net, the relayer keeps nothing, the fee recipient got the fee.
    expect(await h.depositedEvents(payer.address)).toEqual([net]);
    expect(await h.merchantBalance(payer.address)).toBe(net);
    expect(await h.usdcOf(h.relayer.address)).toBe(relayerBefore);
    expect(await h.usdcOf(h.feeRecipient)).toBe(feeBefore + fee(gross));
    expect(await opUsdc(payer.address)).toBe(opBefore - gross);
    const row = (await h.tdb.db.em.fork().findOne(TopUp, { id: topupId }))!;
    expect({ fee: row.fee, bridgeFee: row.bridgeFee, net: row.netAmount }).toEqual({ fee: '25000', bridgeFee: '0', net: '4975000' });

    // One mint (the fill) and one deposit, both on base.
    const bridge = (await h.tdb.db.em.fork().findOne(BridgeTransfer, {
      settlementId: settleWorkflowId(
        'optimism',
        payer.address,
        JSON.parse(Buffer.from(header, 'base64').toString()).payload.authorization.nonce,
      ),
    }))!;
    expect(bridge).toMatchObject({
      state: 'delivered',
      mintTx: done.body.fillTx,
      sourceTx: done.body.settlementTx,
      recipient: h.relayer.address.toLowerCase(),
      bridgeFee: '0',
      fee: '25000',
      payoutAmount: net.toString(),
    });
    const payouts = await payoutsOn(bridge.bridgeNonce!);
    expect(payouts.map((p) => [p.transactionHash, p.args.payout, p.args.received, p.args.fee])).toEqual([
      [done.body.fillTx, h.relayer.address, gross - BRIDGE_FEE, fee(gross)],
    ]);
    const fill = await h.chain.getTransactionReceipt({ hash: done.body.fillTx });
    expect(fill.status).toBe('success');
    const deposits = await h.tdb.db.em.fork().find(RelayerTransaction, { id: `${topupId}:deposit` });
    expect(deposits.map((d) => d.hash)).toEqual([done.body.depositTx]);

    const described = await h.temporal.workflow.getHandle(topupId).describe();
    expect(described.typedSearchAttributes.get(X402Kind)).toBe('topup');
    expect(described.typedSearchAttributes.get(X402State)).toBe('deposited');
  });

  test('a bridge that never attests within TOPUP_BRIDGE_TIMEOUT_MS: needs_review (500), visible by X402State, nothing deposited', async () => {
    // A second gateway on the same stack whose top-ups give the bridge 2 s.
    const app = createTopupApp({
      config: h.tdb.config,
      topup: { ...h.topup, TOPUP_BRIDGE_TIMEOUT_MS: 2_000 },
      db: h.tdb.db,
      networks: buildNetworkTable(h.tdb.config.env),
      temporal: h.temporal,
      logger: createLogger('silent', 'test-topup-short'),
    });
    const server: Server = createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const payer = await opPayer();
      const header = await opPayment(payer, 3_000_000n);
      attester.hold();
      const post = (): Promise<JsonResponse> =>
        request('POST', `${url}/v1/demo-merchant/topups`, { json: {}, headers: { 'x-payment': header } });
      expect((await post()).status).toBe(503);
      const final = await waitUntil(
        'needs_review',
        async () => {
          const res = await post();
          return res.status === 500 ? res : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 300 },
      );
      expect(final.body).toMatchObject({
        success: false,
        state: 'needs_review',
        errorReason: 'needs_review',
        settlementTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        fillTx: null,
        depositTx: null,
        error: 'bridge transfer needs review: no attestation within the time budget',
      });
      const id: string = final.body.topupId;
      expect(await h.get(`/v1/demo-merchant/topups/${id}`, { as: payer })).toMatchObject({
        status: 200,
        body: { state: 'needs_review', errorReason: 'needs_review' },
      });
      const described = await h.temporal.workflow.getHandle(id).describe();
      expect(described.typedSearchAttributes.get(X402State)).toBe('needs_review');
      const listed: string[] = [];
      await waitUntil(
        'the visibility index',
        async () => {
          listed.length = 0;
          for await (const w of h.temporal.workflow.list({ query: `X402Kind = 'topup' AND X402State = 'needs_review'` }))
            listed.push(w.workflowId);
          return listed.includes(id);
        },
        { timeoutMs: 15_000, intervalMs: 300 },
      );
      expect(await h.depositedEvents(payer.address)).toEqual([]);
      expect(await h.merchantBalance(payer.address)).toBe(0n);
    } finally {
      attester.release();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  test('an inconsistent attestation (not signed by the bridge attester): the mint would revert, needs_review (500), nothing minted or deposited', async () => {
    const payer = await opPayer();
    const header = await opPayment(payer, 2_000_000n);
    const opBefore = await opUsdc(payer.address);
    attester.attestWith(generatePrivateKey());
    try {
      const { final, before: interim } = await h.repeatUntil(header, 500, 60_000);
      // Every answer before the final 500 (needs_review) was 503 (bridging).
      expect(interim.filter((s) => s !== 503)).toEqual([]);
      expect(final.body).toMatchObject({
        success: false,
        state: 'needs_review',
        errorReason: 'needs_review',
        fillTx: null,
        depositTx: null,
        error: expect.stringMatching(/^bridge transfer needs review: mint would revert/),
      });
      const id: string = final.body.topupId;
      expect((await h.temporal.workflow.getHandle(id).describe()).typedSearchAttributes.get(X402State)).toBe('needs_review');
      // Burned on optimism (safe in the bridge, deliverable by an operator), nothing minted or credited on base.
      expect(await opUsdc(payer.address)).toBe(opBefore - 2_000_000n);
      const settlementId = settleWorkflowId(
        'optimism',
        payer.address,
        JSON.parse(Buffer.from(header, 'base64').toString()).payload.authorization.nonce,
      );
      const bridge = (await h.tdb.db.em.fork().findOne(BridgeTransfer, { settlementId }))!;
      expect(bridge).toMatchObject({ state: 'needs_review', mintTx: null, sourceTx: final.body.settlementTx });
      expect(await payoutsOn(bridge.bridgeNonce!)).toEqual([]);
      expect(await h.merchantBalance(payer.address)).toBe(0n);
      // A repeat answers the same record, never a second charge.
      const again = await h.post({}, header);
      expect(again).toMatchObject({ status: 500, body: { topupId: id, state: 'needs_review' } });
      expect(await opUsdc(payer.address)).toBe(opBefore - 2_000_000n);
    } finally {
      attester.attestWith();
    }
  });

  test('a source chain that does not answer: left out of the challenge; its quote and payments answer 503 source_unavailable, nothing recorded', async () => {
    const app = createTopupApp({
      config: h.tdb.config,
      topup: h.topup,
      db: h.tdb.db,
      networks: buildNetworkTable({ ...h.tdb.config.env, RPC_URLS_OPTIMISM: 'http://127.0.0.1:9' }),
      temporal: h.temporal,
      logger: createLogger('silent', 'test-topup-down'),
    });
    const server: Server = createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const payer = await opPayer();
      const challenge = await request('POST', `${url}/v1/demo-merchant/topups`, { json: { amount: '5000000' } });
      expect(challenge.status).toBe(402);
      expect(challenge.body.accepts.map((a: any) => a.network)).toEqual(['base']);
      expect(challenge.body.topup.sources.map((s: any) => s.network)).toEqual(['base']);
      const quote = await request('GET', `${url}/v1/demo-merchant/topups/quote?buyer=${payer.address}&network=optimism`);
      expect(quote.status).toBe(503);
      expect(quote.headers.get('retry-after')).toBe('2');
      expect(quote.body).toEqual({
        success: false,
        errorReason: 'source_unavailable',
        error: expect.stringMatching(/^the optimism RPC did not answer/),
      });
      const header = await opPayment(payer, 5_000_000n);
      const paid = await request('POST', `${url}/v1/demo-merchant/topups`, { json: {}, headers: { 'x-payment': header } });
      expect(paid).toMatchObject({ status: 503, body: { success: false, errorReason: 'source_unavailable' } });
      expect(paid.headers.get('retry-after')).toBe('2');
      expect(await h.tdb.db.em.fork().count(TopUp, { payer: payer.address.toLowerCase() })).toBe(0);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  test('@x402/fetch with a viem account pays the challenge (v2, from its PAYMENT-REQUIRED header): same-chain base (200) and cross-chain optimism (503 while bridging, then deposited)', async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    // Funds on both chains.
    const fund = await h.walletOf(TEST_ACCOUNTS.buyers[0]).writeContract({
      address: h.stack.usdc,
      abi: tokenAbi,
      functionName: 'transfer',
      args: [account.address, 10_000_000n],
      chain: undefined,
      account: TEST_ACCOUNTS.buyers[0],
    });
    await waitForReceipt(h.chain, fund);
    const opFund = await opWallet(TEST_ACCOUNTS.buyers[0]).writeContract({
      address: h.stack.usdc,
      abi: tokenAbi,
      functionName: 'transfer',
      args: [account.address, 10_000_000n],
      chain: undefined,
      account: TEST_ACCOUNTS.buyers[0],
    });
    await waitForReceipt(op, opFund);
    const url = `${h.url}/v1/demo-merchant/topups`;
    const body = (amount: string) => ({
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amount }),
    });

    // Same-chain: the client picks the first entry (base).
    const baseClient = exactPayer(account, 'base', 8453, h.stack.usdc);
    const sameChain = await wrapFetchWithPayment(fetch, baseClient)(url, body('2000000'));
    expect(sameChain.status).toBe(200);
    const record = (await sameChain.json()) as any;
    expect(record).toMatchObject({
      success: true,
      state: 'deposited',
      network: 'base',
      payer: account.address,
      buyer: account.address,
      grossAmount: '2000000',
      netAmount: (2_000_000n - fee(2_000_000n)).toString(),
      fillTx: null,
    });
    expect(decodePaymentResponseHeader(sameChain.headers.get('x-payment-response')!)).toMatchObject({
      success: true,
      transaction: record.settlementTx,
      network: 'base',
    });
    // It paid v2 (our 402 carries PAYMENT-REQUIRED), so the v2 answer is there too.
    expect(decodePaymentResponseHeader(sameChain.headers.get('payment-response')!)).toMatchObject({
      success: true,
      transaction: record.settlementTx,
      network: 'eip155:8453',
    });

    // Cross-chain: a client that only pays on optimism picks the optimism entry.
    const opClient = exactPayer(account, 'optimism', 10, h.stack.usdc);
    attester.hold();
    const opBefore = await opUsdc(account.address);
    const crossChain = await wrapFetchWithPayment(fetch, opClient)(url, body('3000000'));
    expect(crossChain.status).toBe(503);
    expect(crossChain.headers.get('retry-after')).toBe('2');
    const pending = (await crossChain.json()) as any;
    expect(pending).toMatchObject({ success: false, network: 'optimism', payer: account.address });
    await poll(pending.topupId, 'bridging', account);
    attester.release();
    const final = await poll(pending.topupId, 'deposited', account);
    const net = 3_000_000n - fee(3_000_000n) - BRIDGE_FEE;
    expect(final.body).toMatchObject({
      success: true,
      grossAmount: '3000000',
      netAmount: net.toString(),
      fillTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(await opUsdc(account.address)).toBe(opBefore - 3_000_000n);
    expect(await h.merchantBalance(account.address)).toBe(2_000_000n - fee(2_000_000n) + net);
    expect(await h.depositedEvents(account.address)).toEqual([2_000_000n - fee(2_000_000n), net]);
  });
});
