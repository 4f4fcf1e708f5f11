import { createWalletClient, defineChain, http, maxUint256, numberToHex, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { RelayerTransaction, Settlement } from '../../src/db/entities';
import { permit2SettleWorkflowId, settleWorkflowId } from '../../src/temporal/workflow-ids';
import {
  DEVNET_USDC_ISSUER_KEY,
  PERMIT2_CANONICAL_ADDRESS,
  X402_EXACT_PERMIT2_PROXY_ADDRESS,
  X402_UPTO_PERMIT2_PROXY_ADDRESS,
} from '../../src/chains/devnet-addresses';
import { fiatTokenAbi } from '../../devnet/usdc';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { fundUsdc, waitForReceipt } from '../support/evm';
import { permit2Payment } from '../support/permit2-payments';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';

type PaymentBody = Awaited<ReturnType<SettleHarness['pay']>> | Awaited<ReturnType<typeof permit2Payment>>;

const devnetChain = {
  name: 'base-sepolia (devnet)',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: ['http://127.0.0.1'] } },
} as const;

/**
 * What Circle's USDC (FiatToken V2.2, as the devnet runs it) does that a token of our own never did:
 * a blacklisted payer or payout, a paused token, an authorization used by another transfer or
 * canceled with `cancelAuthorization` (EIP-3009; a paused token on Permit2 too). Each payment is
 * refused with the spec's reason, moves no money (exact balance deltas) and leaves its workflow
 * finished, with nothing signed.
 */
describe.each(oneDbKind('sqlite'))('USDC behaviour on /v1/settle (%s)', (kind) => {
  let h: SettleHarness;
  const issuer = privateKeyToAccount(DEVNET_USDC_ISSUER_KEY);
  /** Blacklisted or paused by a test: undone after each test, whatever happened, so later suites find USDC as usual. */
  const blacklisted = new Set<Address>();

  beforeAll(async () => {
    h = await startSettleHarness(kind, { relayerIndex: 1 });
  });
  afterEach(async () => {
    for (const account of blacklisted) await asIssuer('unBlacklist', [account]);
    blacklisted.clear();
    if (await token('paused')) await asIssuer('unpause', []);
  });
  afterAll(async () => {
    await h?.close();
  });

  const usdc = () => ({ address: h.stack.usdc, abi: fiatTokenAbi() }) as const;
  const token = (functionName: string, args: readonly unknown[] = []) => h.chain.readContract({ ...usdc(), functionName, args });
  const walletOf = (account: PrivateKeyAccount) => {
    const { rpcUrl, chainId } = h.stack.chains['base-sepolia'];
    return createWalletClient({ account, chain: defineChain({ ...devnetChain, id: chainId }), transport: http(rpcUrl) });
  };

  /** A call of the token's owner, pauser or blacklister (the devnet issuer holds every role). */
  async function asIssuer(functionName: 'blacklist' | 'unBlacklist' | 'pause' | 'unpause', args: readonly unknown[]): Promise<void> {
    const hash = await walletOf(issuer).writeContract({ ...usdc(), functionName, args });
    expect((await waitForReceipt(h.chain, hash)).status).toBe('success');
  }
  async function blacklist(account: Address): Promise<void> {
    blacklisted.add(account);
    await asIssuer('blacklist', [account]);
    expect(await token('isBlacklisted', [account])).toBe(true);
  }

  /** A buyer of its own with 5 USDC, so its balance deltas are exact. */
  async function fundedBuyer(): Promise<PrivateKeyAccount> {
    const buyer = privateKeyToAccount(generatePrivateKey());
    await fundUsdc(h.stack.chains['base-sepolia'], h.stack.usdc, buyer.address, 5_000_000n);
    return buyer;
  }

  const refused = (errorReason: string, payer: Address) => ({
    success: false,
    errorReason,
    transaction: '',
    network: 'base-sepolia',
    payer,
  });

  /**
   * Settles `body` and expects it refused with `errorReason` (and `status`), no balance of payer,
   * payout, fee recipient or facilitator moved, the workflow failed (finished), its row rejected and
   * no relayer transaction recorded for it.
   */
  async function expectRefused(buyer: PrivateKeyAccount, body: PaymentBody, status: number, errorReason: string) {
    const holders = [buyer.address, h.payout, h.feeRecipient, h.stack.facilitator];
    const before = await Promise.all(holders.map((a) => h.balanceOf(a)));
    const res = await h.settle(body);
    expect({ status: res.status, body: res.body }).toEqual({ status, body: refused(errorReason, buyer.address) });
    expect(await Promise.all(holders.map((a) => h.balanceOf(a)))).toEqual(before);

    const { payload } = body.paymentPayload;
    const id =
      'permit' in payload
        ? permit2SettleWorkflowId('base-sepolia', buyer.address, payload.permit.nonce)
        : settleWorkflowId('base-sepolia', buyer.address, payload.authorization.nonce);
    const described = await h.temporal.workflow.getHandle(id).describe();
    expect(described.status.name).toBe('FAILED');
    const row = await h.tdb.db.em.fork().findOneOrFail(Settlement, { id });
    expect(row).toMatchObject({ state: 'rejected', errorReason, transaction: null });
    expect(await h.tdb.db.em.fork().findOne(RelayerTransaction, { id: { $like: `${id}%` } })).toBeNull();
    return res;
  }

  test('a blacklisted payer -> 409 invalid_transaction_state, no money moves, nothing signed', async () => {
    const buyer = await fundedBuyer();
    await blacklist(buyer.address);
    expect(await h.balanceOf(buyer.address)).toBe(5_000_000n); // funds are there: the refusal is the blacklist's
    await expectRefused(buyer, await h.pay(buyer, { value: 1_000_000n }), 409, 'invalid_transaction_state');
  });

  test('a blacklisted payout wallet -> 409 invalid_transaction_state, no money moves, nothing signed', async () => {
    const buyer = await fundedBuyer();
    await blacklist(h.payout);
    await expectRefused(buyer, await h.pay(buyer, { value: 1_000_000n }), 409, 'invalid_transaction_state');
  });

  test('a paused token -> 409 invalid_transaction_state, no money moves; once unpaused the same payment settles', async () => {
    const buyer = await fundedBuyer();
    await asIssuer('pause', []);
    expect(await token('paused')).toBe(true);
    const body = await h.pay(buyer, { value: 1_000_000n });
    await expectRefused(buyer, body, 409, 'invalid_transaction_state');

    // Refused before anything was signed: the authorization is still good, and settles once USDC runs again.
    await asIssuer('unpause', []);
    const payoutBefore = await h.balanceOf(h.payout);
    const res = await h.settle(body);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, payer: buyer.address });
    expect(await h.balanceOf(buyer.address)).toBe(4_000_000n);
    expect(await h.balanceOf(h.payout)).toBe(payoutBefore + 1_000_000n); // no platform fee on this organization
    expect(await h.settledEvents(buyer.address, body.paymentPayload.payload.authorization.nonce as Hex)).toBe(1);
  });

  test('a paused token refuses a Permit2 payment too -> 409 invalid_transaction_state, no money moves', async () => {
    const buyer = await fundedBuyer();
    // The buyer's one-time Permit2 approval, from its own gas.
    await h.chain.request({ method: 'anvil_setBalance', params: [buyer.address, numberToHex(10n ** 18n)] } as never);
    const approved = await walletOf(buyer).writeContract({
      ...usdc(),
      functionName: 'approve',
      args: [PERMIT2_CANONICAL_ADDRESS, maxUint256],
    });
    expect((await waitForReceipt(h.chain, approved)).status).toBe('success');
    await asIssuer('pause', []);
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
      amount: 1_000_000n,
    });
    await expectRefused(buyer, body, 409, 'invalid_transaction_state');
  });

  test('an authorization whose nonce another transfer used -> 409 invalid_exact_evm_payload_authorization_nonce_used', async () => {
    const buyer = await fundedBuyer();
    const body = await h.pay(buyer, { value: 1_000_000n });
    const a = body.paymentPayload.payload.authorization;
    // The buyer signed another transfer with the same nonce (to someone else), and it went on chain first.
    const elsewhere = privateKeyToAccount(generatePrivateKey()).address;
    const other = await h.pay(buyer, { value: 1n, to: elsewhere, nonce: a.nonce as Hex });
    const o = other.paymentPayload.payload.authorization;
    const hash = await walletOf(TEST_ACCOUNTS.buyers[0]).writeContract({
      ...usdc(),
      functionName: 'transferWithAuthorization',
      args: [o.from, o.to, BigInt(o.value), BigInt(o.validAfter), BigInt(o.validBefore), o.nonce, other.paymentPayload.payload.signature],
    });
    expect((await waitForReceipt(h.chain, hash)).status).toBe('success');
    expect(await token('authorizationState', [buyer.address, a.nonce])).toBe(true);
    expect(await h.balanceOf(elsewhere)).toBe(1n);

    await expectRefused(buyer, body, 409, 'invalid_exact_evm_payload_authorization_nonce_used');
  });

  test('an authorization canceled with cancelAuthorization -> 409 invalid_exact_evm_payload_authorization_nonce_used', async () => {
    const buyer = await fundedBuyer();
    const body = await h.pay(buyer, { value: 1_000_000n });
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const chainId = h.stack.chains['base-sepolia'].chainId;
    const signature = await buyer.signTypedData({
      domain: { name: 'USDC', version: '2', chainId, verifyingContract: h.stack.usdc },
      types: {
        CancelAuthorization: [
          { name: 'authorizer', type: 'address' },
          { name: 'nonce', type: 'bytes32' },
        ],
      },
      primaryType: 'CancelAuthorization',
      message: { authorizer: buyer.address, nonce },
    });
    // Anyone may submit the cancellation the buyer signed (FiatToken V2.2's `bytes signature` overload).
    const hash = await walletOf(TEST_ACCOUNTS.buyers[0]).writeContract({
      ...usdc(),
      functionName: 'cancelAuthorization',
      args: [buyer.address, nonce, signature],
    });
    expect((await waitForReceipt(h.chain, hash)).status).toBe('success');
    expect(await token('authorizationState', [buyer.address, nonce])).toBe(true);

    await expectRefused(buyer, body, 409, 'invalid_exact_evm_payload_authorization_nonce_used');
  });
});
