import { createPublicClient, createWalletClient, http, type Address, type LocalAccount, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startAnvil, type Anvil } from '../../devnet/anvil';
import { attesterChainsFrom, startBridgeAttester, type BridgeAttester } from '../../devnet/bridge-attester';
import { deployDevnet } from '../../devnet/deploy';
import { mainnetDevnetEnv } from '../../devnet/start-topup';
import { TEST_ACCOUNTS } from '../support/accounts';
import { waitForReceipt } from '../support/evm';
import { exactPayment } from '../support/payments';
import { readStackInfo } from '../support/stack-info';
import { startTopupHarness, TOPUP_TEST_FEE_BPS, TOPUP_TEST_FEE_FIXED, type TopupHarness } from '../support/topup-harness';
import { tokenAbi } from '../../src/chains/evm/abi';

/**
 * The top-up sources the spec lists (issue 14): `ink` (chain 57073, CCTP domain 21) is a cross-chain
 * source once configured, here on its own devnet anvil with our contracts and bridge pair, listed in
 * the quote and the challenge and paid end to end; `robinhood` pays in USDG, which CCTP cannot bridge
 * to Base, so it is refused with `wrong_network` and says why. The quote and challenge write no rows,
 * so one database kind is enough here (the top-up rows are tested on both in topup-crosschain).
 */
const INK_CHAIN_ID = 57073;
const fee = (gross: bigint) => TOPUP_TEST_FEE_FIXED + (gross * TOPUP_TEST_FEE_BPS) / 10_000n;
/** The bridge's fee of a standard transfer: none (Circle charges fast transfers only; so does the devnet's attester). */
const BRIDGE_FEE = 0n;

describe('top-up sources: ink and robinhood', () => {
  const stack = readStackInfo();
  let ink: Anvil;
  let attester: BridgeAttester;
  let h: TopupHarness;
  let inkClient: PublicClient;

  beforeAll(async () => {
    ink = await startAnvil({ chainId: INK_CHAIN_ID, log: () => undefined });
    await deployDevnet({
      rpcUrl: ink.rpcUrl,
      chainId: INK_CHAIN_ID,
      relayers: TEST_ACCOUNTS.relayers.map((a) => a.address),
      buyers: [{ address: TEST_ACCOUNTS.buyers[0].address, amount: 1_000_000_000n }],
    });
    const env = {
      ...mainnetDevnetEnv(stack.chains.base.rpcUrl, stack.chains.optimism.rpcUrl),
      RPC_URLS_INK: ink.rpcUrl,
      USDC_ADDRESS_INK: stack.usdc,
    };
    attester = await startBridgeAttester({
      chains: attesterChainsFrom({ ...env, RPC_URLS_BASE_SEPOLIA: 'none', RPC_URLS_OPTIMISM_SEPOLIA: 'none' }),
    });
    h = await startTopupHarness('sqlite', {
      relayerIndex: 2,
      env: {
        ...env,
        TOPUP_SOURCES: 'base,optimism,ink,robinhood',
        BRIDGE_ATTESTATION_URL: attester.url,
        TOPUP_WAIT_MS: '1500',
        TOPUP_RETRY_AFTER_SECONDS: '2',
        RECEIPT_WAIT_MS: '3000',
      },
    });
    inkClient = createPublicClient({ transport: http(ink.rpcUrl) }) as PublicClient;
  });
  afterAll(async () => {
    await h?.close();
    await attester?.stop();
    await ink?.stop();
  });

  const inkUsdc = (who: Address) => inkClient.readContract({ address: stack.usdc, abi: tokenAbi, functionName: 'balanceOf', args: [who] });
  /** A fresh payer holding `usdc` on ink only. */
  const inkPayer = async (usdc: bigint): Promise<LocalAccount> => {
    const payer = privateKeyToAccount(generatePrivateKey());
    const chain = {
      id: INK_CHAIN_ID,
      name: 'ink-devnet',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [ink.rpcUrl] } },
    } as const;
    const funder = TEST_ACCOUNTS.buyers[0];
    const w = createWalletClient({ account: funder, chain, transport: http(ink.rpcUrl) });
    await waitForReceipt(
      inkClient,
      await w.writeContract({ address: stack.usdc, abi: tokenAbi, functionName: 'transfer', args: [payer.address, usdc] }),
    );
    return payer;
  };

  test('quote and challenge list ink (57073) as a cross-chain source to base, with its token domain and destinationChainId', async () => {
    const buyer = privateKeyToAccount(generatePrivateKey()).address;
    const quote = await h.get(`/v1/demo-merchant/topups/quote?buyer=${buyer}&network=ink&amount=5000000`);
    expect(quote.status).toBe(200);
    // The same bounds as optimism: both carry the buffered bridge fee (fallback 50,000 + 20 %).
    const sources = [
      { network: 'base', evmChainId: 8453, minAmount: '1013039', maxAmount: '1003019057' },
      { network: 'optimism', evmChainId: 10, minAmount: '1073219', maxAmount: '1003019057' },
      { network: 'ink', evmChainId: INK_CHAIN_ID, minAmount: '1073219', maxAmount: '1003019057' },
    ];
    expect(quote.body).toEqual({
      buyer,
      amount: '5000000',
      minAmount: '1073219',
      maxAmount: '1003019057',
      balance: '0',
      creditLimit: '1000000000',
      headroom: '1000000000',
      minBuyerDeposit: '1000000',
      requirements: {
        scheme: 'exact',
        network: 'ink',
        maxAmountRequired: '5000000',
        resource: `${h.url}/v1/demo-merchant/topups`,
        description: 'Top-up of your demo-merchant balance',
        mimeType: 'application/json',
        payTo: stack.facilitator,
        maxTimeoutSeconds: 300,
        asset: stack.usdc,
        extra: { name: 'USDC', version: '2', destinationChainId: 8453 },
      },
      sources,
    });

    const challenge = await h.post({ buyer, amount: '5000000' });
    expect(challenge.status).toBe(402);
    expect(challenge.body.accepts.map((a: any) => [a.network, a.asset, a.payTo, a.extra])).toEqual([
      ['base', stack.usdc, stack.facilitator, { name: 'USDC', version: '2' }],
      ['optimism', stack.usdc, stack.facilitator, { name: 'USDC', version: '2', destinationChainId: 8453 }],
      ['ink', stack.usdc, stack.facilitator, { name: 'USDC', version: '2', destinationChainId: 8453 }],
    ]);
    expect(challenge.body.topup.sources).toEqual(sources);
  });

  test('an ink payment is bridged (CCTP domain 21 -> 6) and deposited: exact net on the merchant contract', async () => {
    const gross = 5_000_000n;
    const net = gross - fee(gross) - BRIDGE_FEE;
    const payer = await inkPayer(gross);
    const body = await exactPayment({
      buyer: payer,
      network: 'ink',
      chainId: INK_CHAIN_ID,
      usdc: stack.usdc,
      facilitator: stack.facilitator,
      value: gross,
      extra: { name: 'USDC', version: '2', destinationChainId: 8453 },
    });
    const header = Buffer.from(JSON.stringify(body.paymentPayload)).toString('base64');
    const first = await h.post({}, header);
    expect([200, 503]).toContain(first.status);
    const { final: done, before: interim } = await h.repeatUntil(header, 200, 90_000);
    // Every repeat before the final 200 answered 503 (bridging).
    expect(interim.filter((s) => s !== 503)).toEqual([]);
    expect(done.body).toMatchObject({
      success: true,
      topupId: first.body.topupId,
      state: 'deposited',
      network: 'ink',
      sourceNetwork: 'ink',
      grossAmount: gross.toString(),
      netAmount: net.toString(),
      fillTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      depositTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(await inkUsdc(payer.address)).toBe(0n);
    expect(await h.depositedEvents(payer.address)).toEqual([net]);
    expect(await h.merchantBalance(payer.address)).toBe(net);
  });

  test('robinhood pays in USDG, which CCTP cannot bridge to base: quote and payment answer 400 wrong_network saying so', async () => {
    const buyer = privateKeyToAccount(generatePrivateKey());
    const refusal = {
      success: false,
      errorReason: 'wrong_network',
      error: 'network robinhood pays in USDG, which the bridge to base (CCTP) cannot carry: it cannot be a top-up source',
    };
    const quote = await h.get(`/v1/demo-merchant/topups/quote?buyer=${buyer.address}&network=robinhood`);
    expect({ status: quote.status, body: quote.body }).toEqual({ status: 400, body: refusal });
    const payment = await exactPayment({
      buyer,
      network: 'robinhood',
      chainId: 1,
      usdc: stack.usdc,
      facilitator: stack.facilitator,
      value: 5_000_000n,
      extra: { name: 'Global Dollar', version: '1', destinationChainId: 8453 },
    });
    const paid = await h.post({}, Buffer.from(JSON.stringify(payment.paymentPayload)).toString('base64'));
    expect({ status: paid.status, body: paid.body }).toEqual({ status: 400, body: refusal });
    // Neither a challenge entry nor a quoted source.
    const challenge = await h.post({ buyer: buyer.address, amount: '5000000' });
    expect(challenge.body.accepts.map((a: any) => a.network)).toEqual(['base', 'optimism', 'ink']);
  });
});
