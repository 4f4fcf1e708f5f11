import { maxUint256, parseEventLogs, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { rpc } from '../../devnet/anvil';
import { fiatTokenAbi } from '../../devnet/usdc';
import {
  X402_EXACT_PERMIT2_PROXY_ADDRESS,
  PERMIT2_CANONICAL_ADDRESS,
  X402_UPTO_PERMIT2_PROXY_ADDRESS,
} from '../../src/chains/devnet-addresses';
import { Settlement } from '../../src/db/entities';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { waitForReceipt } from '../support/evm';
import { permit2Payment } from '../support/permit2-payments';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { createWalletClient, defineChain, http } from 'viem';
import { facilitatorAbi } from '../../src/chains/evm/abi';

/**
 * The marketplace fee (spec `extra.platform` / `extra.platformFeeBps`) on the real stack: the
 * facilitator contract pays the organization's fee, the marketplace's cut and the payout in the one
 * settling transaction, for EIP-3009 and Permit2; values out of bounds are refused before anything runs.
 */
describe.each(oneDbKind('postgres'))('POST /v1/settle with a marketplace fee (%s)', (kind) => {
  let h: SettleHarness;
  const buyer = TEST_ACCOUNTS.buyers[kind === 'sqlite' ? 2 : 3];
  // A fresh marketplace wallet per suite, so its balance delta is exact.
  const platform = privateKeyToAccount(generatePrivateKey()).address;

  beforeAll(async () => {
    h = await startSettleHarness(kind, { relayerIndex: 2, platformFeeBps: 250 });
    // The buyer's one-time Permit2 approval, as a Permit2 wallet makes it.
    const { rpcUrl, chainId } = h.stack.chains['base-sepolia'];
    const chain = defineChain({
      id: chainId,
      name: 'base-sepolia',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [rpcUrl] } },
    });
    const wallet = createWalletClient({ account: buyer, chain, transport: http(rpcUrl) });
    const hash = await wallet.writeContract({
      address: h.stack.usdc,
      abi: fiatTokenAbi(),
      functionName: 'approve',
      args: [PERMIT2_CANONICAL_ADDRESS, maxUint256],
    } as never);
    expect((await waitForReceipt(h.chain, hash)).status).toBe('success');
  });
  afterAll(async () => {
    await h?.close();
  });

  const balances = () =>
    Promise.all([h.balanceOf(buyer.address), h.balanceOf(h.payout), h.balanceOf(h.feeRecipient), h.balanceOf(platform)]);
  const marketplace = (platformFeeBps: unknown = 500) => ({ name: 'USDC', version: '2', platform, platformFeeBps });
  const platformFeesPaid = async (hash: `0x${string}`) => {
    const receipt = await h.chain.getTransactionReceipt({ hash });
    return parseEventLogs({ abi: facilitatorAbi, logs: receipt.logs, eventName: 'PlatformFeePaid' }).map((l) => l.args);
  };

  test('EIP-3009: buyer pays 2 USDC; organization fee 2.5 %, marketplace 5 %, payout the rest, one transaction; recorded', async () => {
    const body = await h.pay(buyer, { value: 2_000_000n, extra: marketplace() });
    const before = await balances();

    const res = await h.settle(body);

    expect({ status: res.status, body: res.body }).toEqual({
      status: 200,
      body: { success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), network: 'base-sepolia', payer: buyer.address },
    });
    expect(await balances()).toEqual([before[0] - 2_000_000n, before[1] + 1_850_000n, before[2] + 50_000n, before[3] + 100_000n]);
    expect(await platformFeesPaid(res.body.transaction)).toEqual([{ token: h.stack.usdc, platform, amount: 100_000n }]);
    const nonce = body.paymentPayload.payload.authorization.nonce;
    const row = await h.tdb.db.em.fork().findOneOrFail(Settlement, { id: `settle:base-sepolia:${buyer.address.toLowerCase()}:${nonce}` });
    expect(row).toMatchObject({
      state: 'settled',
      amount: '2000000',
      fee: '50000',
      platform: platform.toLowerCase(),
      platformFee: '100000',
    });

    // A repeat moves nothing more.
    const again = await h.settle(body);
    expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: res.body });
    expect(await balances()).toEqual([before[0] - 2_000_000n, before[1] + 1_850_000n, before[2] + 50_000n, before[3] + 100_000n]);
  });

  test('Permit2 exact: the same split, the fee given as a decimal string', async () => {
    const body = await permit2Payment({
      scheme: 'exact',
      buyer,
      network: 'base-sepolia',
      chainId: h.stack.chains['base-sepolia'].chainId,
      usdc: h.stack.usdc,
      facilitator: h.stack.facilitator,
      permit2: PERMIT2_CANONICAL_ADDRESS,
      exactProxy: X402_EXACT_PERMIT2_PROXY_ADDRESS,
      uptoProxy: X402_UPTO_PERMIT2_PROXY_ADDRESS,
      amount: 1_000_001n,
    });
    body.paymentRequirements.extra = { ...body.paymentRequirements.extra, platform, platformFeeBps: '1000' };
    const before = await balances();

    const res = await h.settle(body);

    expect({ status: res.status, body: res.body }).toEqual({
      status: 200,
      body: { success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), network: 'base-sepolia', payer: buyer.address },
    });
    // Fees round down: 2.5 % of 1 000 001 is 25 000, 10 % is 100 000; the payout gets the remainder.
    expect(await balances()).toEqual([before[0] - 1_000_001n, before[1] + 875_001n, before[2] + 25_000n, before[3] + 100_000n]);
    expect(await platformFeesPaid(res.body.transaction)).toEqual([{ token: h.stack.usdc, platform, amount: 100_000n }]);
  });

  const refused = (errorMessage: string) => ({
    status: 400,
    body: {
      success: false,
      errorReason: 'invalid_payment_requirements',
      errorMessage,
      transaction: '',
      network: 'base-sepolia',
      payer: buyer.address,
    },
  });
  const cases: [string, Record<string, unknown>, string][] = [
    ['above 10000 bps', { platform, platformFeeBps: 10_001 }, 'extra.platformFeeBps must be an integer from 0 to 10000'],
    ['negative', { platform, platformFeeBps: -1 }, 'extra.platformFeeBps must be an integer from 0 to 10000'],
    ['a fraction', { platform, platformFeeBps: 2.5 }, 'extra.platformFeeBps must be an integer from 0 to 10000'],
    ['not a number', { platform, platformFeeBps: 'ten' }, 'extra.platformFeeBps must be an integer from 0 to 10000'],
    [
      'over 100 % with the organization fee',
      { platform, platformFeeBps: 9_751 },
      "extra.platformFeeBps plus the organization's fee (250 bps) exceeds 10000 bps",
    ],
    ['a fee without a platform', { platformFeeBps: 100 }, 'extra.platform and extra.platformFeeBps must be given together'],
    ['a platform without a fee', { platform }, 'extra.platform and extra.platformFeeBps must be given together'],
    [
      'a platform that is no address',
      { platform: '0x1234', platformFeeBps: 100 },
      'extra.platform must be a 0x-prefixed 20-byte hex address',
    ],
    [
      'the zero address',
      { platform: `0x${'0'.repeat(40)}`, platformFeeBps: 100 },
      'extra.platform must be a wallet, not the zero address or the facilitator contract',
    ],
  ];
  test.each(cases)('refused before anything runs: %s', async (_name, fields, message) => {
    const body = await h.pay(buyer, { value: 1_000n, extra: { name: 'USDC', version: '2', ...fields } });
    const before = await balances();
    const res = await h.settle(body);
    expect({ status: res.status, body: res.body }).toEqual(refused(message));
    const nonce = body.paymentPayload.payload.authorization.nonce;
    expect(await h.tdb.db.em.fork().findOne(Settlement, { id: `settle:base-sepolia:${buyer.address.toLowerCase()}:${nonce}` })).toBeNull();
    expect(await balances()).toEqual(before);
  });

  test('refused on the cross-chain route, whose destination payout cannot pay a second fee', async () => {
    const optimismSepolia = h.stack.chains['optimism-sepolia'].chainId;
    const body = await h.pay(buyer, {
      value: 1_000n,
      extra: { name: 'USDC', version: '2', destinationChainId: optimismSepolia, platform, platformFeeBps: 100 },
    });
    const before = await balances();
    const res = await h.settle(body);
    expect({ status: res.status, body: res.body }).toEqual(
      refused('extra.platformFeeBps is not applied on this route; settle on one chain'),
    );
    expect(await balances()).toEqual(before);
  });

  test('refused: the facilitator contract as platform (its balance could never leave)', async () => {
    const body = await h.pay(buyer, {
      value: 1_000n,
      extra: { name: 'USDC', version: '2', platform: h.stack.facilitator as Address, platformFeeBps: 1 },
    });
    expect(await h.settle(body).then((r) => ({ status: r.status, body: r.body }))).toEqual(
      refused('extra.platform must be a wallet, not the zero address or the facilitator contract'),
    );
  });
});

/** The worker is SIGKILLed after broadcasting a settlement with a marketplace fee: every party is paid exactly once. */
describe.each(oneDbKind('postgres'))('marketplace fee durability (%s)', (kind) => {
  let h: SettleHarness;
  let rpcUrl: string;
  const buyer = TEST_ACCOUNTS.buyers[kind === 'sqlite' ? 2 : 3];
  const platform = privateKeyToAccount(generatePrivateKey()).address;

  beforeAll(async () => {
    // A short wait, so the API answers settlement_pending while the chain is paused.
    h = await startSettleHarness(kind, { relayerIndex: 2, platformFeeBps: 250, env: { SETTLE_WAIT_MS: '1500', RECEIPT_WAIT_MS: '5000' } });
    rpcUrl = h.stack.chains['base-sepolia'].rpcUrl;
  });
  afterAll(async () => {
    await rpc(rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
    await h?.close();
  });

  test('worker killed after broadcasting: one transaction; buyer, payout, organization fee and platform each move once', async () => {
    const body = await h.pay(buyer, { value: 3_000_000n, extra: { name: 'USDC', version: '2', platform, platformFeeBps: 300 } });
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const before = await Promise.all([
      h.balanceOf(buyer.address),
      h.balanceOf(h.payout),
      h.balanceOf(h.feeRecipient),
      h.balanceOf(platform),
    ]);

    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    let hash: Hex;
    try {
      hash = (await h.settleUntilBroadcast(body)).body.transaction as Hex;
      expect((await h.chain.getTransaction({ hash })).blockNumber).toBeNull();
      const killed = h.worker.child.pid!;
      await h.restartWorker({ kill: true });
      expect(() => process.kill(killed, 0)).toThrow();
      const repeat = await h.settle(body);
      expect({ status: repeat.status, transaction: repeat.body.transaction }).toEqual({ status: 202, transaction: hash });
      await rpc(rpcUrl, 'evm_mine', []);
    } finally {
      await rpc(rpcUrl, 'evm_setAutomine', [true]);
    }

    const final = await h.settleUntilFinal(body);
    expect({ status: final.status, body: final.body }).toEqual({
      status: 200,
      body: { success: true, transaction: hash, network: 'base-sepolia', payer: buyer.address },
    });
    // 2.5 % organization fee = 75 000, 3 % marketplace = 90 000, payout 2 835 000.
    expect(
      await Promise.all([h.balanceOf(buyer.address), h.balanceOf(h.payout), h.balanceOf(h.feeRecipient), h.balanceOf(platform)]),
    ).toEqual([before[0] - 3_000_000n, before[1] + 2_835_000n, before[2] + 75_000n, before[3] + 90_000n]);
    expect(await h.settledEvents(buyer.address, nonce)).toBe(1);
    const logs = await h.chain.getLogs({ address: h.stack.facilitator, fromBlock: 0n, toBlock: 'latest' });
    const paid = parseEventLogs({ abi: facilitatorAbi, logs, eventName: 'PlatformFeePaid' }).filter((l) => l.args.platform === platform);
    expect(paid.map((l) => l.transactionHash)).toEqual([hash]);
  });
});
