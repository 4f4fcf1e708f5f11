import { randomUUID } from 'node:crypto';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { createPublicClient, http, numberToHex, type Address, type Hex, type PublicClient } from 'viem';
import { rpc } from '../../devnet/anvil';
import type { BridgeAttester } from '../../devnet/bridge-attester';
import { buildNetworkTable } from '../../src/chains/networks';
import { BRIDGE_ABANDONED, BridgeTransfer } from '../../src/db/bridge-transfer';
import { Organization, Settlement } from '../../src/db/entities';
import { settlementRejection } from '../../src/settle/types';
import type { CrossChainOutcome, CrossChainSettleInput } from '../../src/schemes/eip3009-crosschain/types';
import { abandonBridgeLegUpdate } from '../../workflows/operator-actions';
import { fundUsdc } from '../support/evm';
import { readStackInfo, startStackAttester } from '../support/stack-info';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { InferenceCharge, RelayerTransaction } from '../../src/db/entities';
import { MediaJob } from '../../src/db/media';
import { chatChargeId, INFERENCE_ORGANIZATION_ID, refundWorkflowId, type RefundInput } from '../../src/inference/types';
import { mediaChargeId, mediaWorkflowId, type MediaJobInput } from '../../src/media/types';
import type { WithdrawalInput } from '../../src/gateway/withdrawal-types';
import { settleWorkflowId, topupWorkflowId } from '../../src/temporal/workflow-ids';
import { DEVNET_MERCHANT_ADDRESS } from '../../src/chains/devnet-addresses';
import type { Eip3009SettleInput } from '../../src/schemes/eip3009/types';
import type { TopUpInput } from '../../src/topup/types';
import { exactPayment } from '../support/payments';
import { startTopupHarness, type TopupHarness } from '../support/topup-harness';
import { waitUntil } from '../../devnet/process';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { request } from '../support/http';
import { IMAGE_PRICE, MEDIA, startMediaHarness, type MediaHarness } from '../support/media-harness';
import { tokenAbi } from '../../src/chains/evm/abi';

/**
 * docs/security.md "Forged workflows": whoever can start a workflow on Temporal (the API's
 * credentials, the UI's write actions, a shared cluster) starts each money workflow by hand with
 * inflated amounts and foreign payees, on the real stack (Temporal, a worker process, anvil with our
 * contracts). Nothing moves: the attacker's and our wallets' balances are exactly as before, our
 * wallet signs no transaction (its nonce is unchanged), and every workflow ends refused or failed.
 */
const INFLATED = 10n ** 12n;

describe.each(oneDbKind('sqlite'))('forged money workflows (%s)', (kind) => {
  let h: MediaHarness;
  const relayerIndex = 0;
  /** Revenue wallet, gateway depositor and settlement relayer (one key in devnet). */
  const ours = TEST_ACCOUNTS.relayers[relayerIndex]!.address;
  const attacker = TEST_ACCOUNTS.buyers[0]!;
  const thief = privateKeyToAccount(generatePrivateKey()).address;
  let taskQueue: string;

  beforeAll(async () => {
    // Paid chat too (the devnet provider doubles), for the chat refund forgeries.
    const stack = readStackInfo();
    h = await startMediaHarness(kind, {
      relayerIndex,
      env: { INFERENCE_PROVIDERS: stack.inference.providers, INFERENCE_TEMPLATES_URL: stack.inference.templatesUrl },
    });
    taskQueue = h.tdb.config.TEMPORAL_TASK_QUEUE;
  });
  afterAll(async () => {
    await h?.close();
  });

  /** Balances of the attacker, the thief's address and our wallet, and our wallet's nonce. */
  const snapshot = async () => ({
    attacker: await h.balanceOf(attacker.address),
    thief: await h.balanceOf(thief),
    ours: await h.balanceOf(ours),
    oursNonce: await h.chain.getTransactionCount({ address: ours, blockTag: 'pending' }),
  });
  const authorizationUsed = (from: Address, nonce: Hex) =>
    h.chain.readContract({ address: h.stack.usdc, abi: tokenAbi, functionName: 'authorizationState', args: [from, nonce] });
  const failureType = async (run: Promise<unknown>) => {
    const err = (await run.then(
      () => undefined,
      (e: unknown) => e,
    )) as { cause?: { type?: string; cause?: { type?: string } } } | undefined;
    return err?.cause?.cause?.type ?? err?.cause?.type;
  };

  /** The media input the API would build for `value` signed by the attacker, then forged by `forge`. */
  async function mediaInput(value: bigint, forge: (i: MediaJobInput) => MediaJobInput) {
    const { paymentPayload, paymentRequirements } = await h.pay(attacker, { value });
    const a = paymentPayload.payload.authorization;
    const key = `forged-${randomUUID()}`;
    const input: MediaJobInput = {
      workflowId: mediaWorkflowId(attacker.address, key),
      jobId: randomUUID(),
      buyer: attacker.address.toLowerCase(),
      kind: 'video',
      model: 'reel-1',
      prompt: 'a lighthouse #fail',
      n: 1,
      price: value.toString(),
      network: 'base-sepolia',
      asset: h.stack.usdc,
      chargeId: mediaChargeId('base-sepolia', a.from, a.nonce),
      revenueWallet: ours,
      settle: {
        workflowId: settleWorkflowId('base-sepolia', a.from, a.nonce),
        organizationId: INFERENCE_ORGANIZATION_ID,
        apiKeyId: '',
        route: 'eip3009',
        network: 'base-sepolia',
        payer: a.from,
        amount: value.toString(),
        paymentPayload: paymentPayload as MediaJobInput['settle']['paymentPayload'],
        paymentRequirements: paymentRequirements as MediaJobInput['settle']['paymentRequirements'],
        payout: ours,
        fee: '0',
        feeRecipient: '0x0000000000000000000000000000000000000000',
      },
      pollIntervalMs: 200,
      jobTimeoutMs: 10_000,
    };
    return { input: forge(input), nonce: a.nonce as Hex };
  }

  test('media: a one-unit authorization with price = amount = 10^12 and a failing model, or a foreign payee: refused, nothing moves', async () => {
    const before = await snapshot();
    const forgeries = [
      // The exploit: pay one unit, claim 10^12, let the model fail, collect the refund.
      await mediaInput(1n, (i) => ({ ...i, price: INFLATED.toString(), settle: { ...i.settle, amount: INFLATED.toString() } })),
      // The right price, settled to the attacker's own wallet, then refunded from ours.
      await mediaInput(500_000n, (i) => ({ ...i, revenueWallet: thief, settle: { ...i.settle, payout: thief } })),
    ];
    for (const { input, nonce } of forgeries) {
      const run = h.temporal.workflow.execute('mediaJobWorkflow', { workflowId: input.workflowId, taskQueue, args: [input] });
      expect(await failureType(run)).toBe('MediaPaymentRejected');
      expect(await authorizationUsed(attacker.address, nonce)).toBe(false);
      expect(await h.tdb.db.em.fork().findOne(InferenceCharge, { id: input.chargeId })).toBeNull();
    }
    expect(await snapshot()).toEqual(before);
  });

  test('settlement: a fast settlement started by hand that names a foreign payout, fee recipient or marketplace: refused before signing, nothing moves', async () => {
    const org = await h.tdb.db.em.fork().findOneOrFail(Organization, { payoutWalletTest: h.payout.toLowerCase() });
    expect(org.platformFeeBps).toBe(0); // so any fee in the input is a forgery
    const VALUE = 500_000n;
    /** The input the API builds for `value` signed by the attacker to the organization, then forged by `forge`. */
    const settleInput = async (forge: (i: Eip3009SettleInput) => Eip3009SettleInput) => {
      const { paymentPayload, paymentRequirements } = await h.pay(attacker, { value: VALUE });
      const a = paymentPayload.payload.authorization;
      const input: Eip3009SettleInput = {
        workflowId: settleWorkflowId('base-sepolia', a.from, a.nonce),
        organizationId: org.id,
        apiKeyId: '',
        route: 'eip3009',
        network: 'base-sepolia',
        payer: a.from,
        amount: a.value,
        paymentPayload: paymentPayload as Eip3009SettleInput['paymentPayload'],
        paymentRequirements: paymentRequirements as Eip3009SettleInput['paymentRequirements'],
        payout: h.payout,
        fee: '0',
        feeRecipient: '0x0000000000000000000000000000000000000000',
      };
      return { input: forge(input), nonce: a.nonce as Hex };
    };
    const settle = (input: Eip3009SettleInput) =>
      h.temporal.workflow.execute('fastSettlementWorkflow', { workflowId: input.workflowId, taskQueue, args: [input] });
    const before = { ...(await snapshot()), payout: await h.balanceOf(h.payout) };
    const forgeries = [
      await settleInput((i) => ({ ...i, payout: thief })),
      await settleInput((i) => ({ ...i, fee: (VALUE - 1n).toString(), feeRecipient: thief })),
      await settleInput((i) => ({ ...i, platform: thief, platformFee: (VALUE - 1n).toString() })),
      // Our own paid services' organization, paying the thief instead of our revenue wallet.
      await settleInput((i) => ({ ...i, organizationId: INFERENCE_ORGANIZATION_ID, payout: thief })),
      // An organization that does not exist.
      await settleInput((i) => ({ ...i, organizationId: randomUUID(), payout: thief })),
    ];
    for (const { input, nonce } of forgeries) {
      const err = await settle(input).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(settlementRejection(err)?.response).toEqual({
        success: false,
        errorReason: 'invalid_payment_requirements',
        transaction: '',
        network: 'base-sepolia',
        payer: attacker.address,
      });
      expect(await authorizationUsed(attacker.address, nonce)).toBe(false);
    }
    expect({ ...(await snapshot()), payout: await h.balanceOf(h.payout) }).toEqual(before);

    // The same authorization with the organization's own terms settles: the worker refuses forgeries, not payments.
    const real = forgeries[0]!;
    const outcome = await settle({ ...real.input, payout: h.payout });
    expect(outcome.response).toMatchObject({ success: true, payer: attacker.address });
    expect(await h.balanceOf(h.payout)).toBe(before.payout + VALUE);
    expect(await h.balanceOf(thief)).toBe(0n);
  });

  test('chat refund: a refund started by hand for a delivered charge or a charge that does not exist, inflated and to a foreign payee: refused', async () => {
    // A real, paid and delivered image: the attacker's own money reaches our wallet first.
    const key = `real-${randomUUID()}`;
    const paid = await request('POST', `${h.api.baseUrl}${MEDIA}/images`, {
      json: { prompt: 'a lighthouse' },
      headers: { 'Idempotency-Key': key, 'X-PAYMENT': await h.xPayment(attacker, IMAGE_PRICE) },
    });
    expect([200, 202]).toContain(paid.status);
    const job = await waitUntil(
      'the real image job to succeed',
      async () => {
        const j = await h.tdb.db.em.fork().findOne(MediaJob, { workflowId: mediaWorkflowId(attacker.address, key) });
        return j?.state === 'succeeded' ? j : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    const charge = await h.tdb.db.em.fork().findOneOrFail(InferenceCharge, { id: job.chargeId });
    expect(charge.state).toBe('delivered');
    const before = await snapshot();

    const forged = (chargeId: string): RefundInput => ({
      workflowId: refundWorkflowId(chargeId),
      chargeId,
      settlementId: charge.settlementId,
      network: 'base-sepolia',
      payer: thief,
      amount: INFLATED.toString(),
      asset: h.stack.usdc,
      revenueWallet: ours,
      reason: 'forged by hand',
    });
    const real = forged(charge.id);
    const run = h.temporal.workflow.execute('refundWorkflow', { workflowId: real.workflowId, taskQueue, args: [real] });
    expect(await failureType(run)).toBe('RefundNotOwed');
    const ghost = forged(`${charge.id}-ghost`);
    expect(await h.temporal.workflow.execute('refundWorkflow', { workflowId: ghost.workflowId, taskQueue, args: [ghost] })).toEqual({
      state: 'not_charged',
      refundTx: '',
    });

    expect(await snapshot()).toEqual(before);
    expect((await h.tdb.db.em.fork().findOneOrFail(InferenceCharge, { id: charge.id })).state).toBe('delivered');
    expect(await h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `${refundWorkflowId(charge.id)}%` } })).toEqual([]);
  });

  test("chat refund: a refund started by hand for a chat still being read (no failure on the provider's side recorded): refused, nothing moves, the chat is delivered", async () => {
    const CHAT_PRICE = 10_000n; // INFERENCE_CHAT_PRICE's default
    // A real paid chat whose reply streams for seconds (one token every 200 ms): the attacker reads it
    // and, meanwhile, starts the refund of its charge by hand.
    const payment = await h.xPayment(attacker, CHAT_PRICE);
    const a = JSON.parse(Buffer.from(payment, 'base64').toString('utf8')).payload.authorization;
    const chargeId = chatChargeId('base-sepolia', a.from, a.nonce);
    const question = `#token-delay=200 read slowly ${Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ')}`;
    const res = await fetch(`${h.api.baseUrl}/v1/inference/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-PAYMENT': payment },
      body: JSON.stringify({ messages: [{ role: 'user', content: question }] }),
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await reader.read(); // streaming has begun
    const charge = await h.tdb.db.em.fork().findOneOrFail(InferenceCharge, { id: chargeId });
    expect(charge.state).toBe('charged');
    const before = await snapshot();

    const forged: RefundInput = {
      workflowId: refundWorkflowId(chargeId),
      chargeId,
      settlementId: charge.settlementId,
      network: 'base-sepolia',
      payer: thief,
      amount: INFLATED.toString(),
      asset: h.stack.usdc,
      revenueWallet: ours,
      reason: 'the provider failed (forged by hand)',
    };
    const run = h.temporal.workflow.execute('refundWorkflow', { workflowId: forged.workflowId, taskQueue, args: [forged] });
    const failure = (await run.then(
      () => undefined,
      (e: unknown) => e,
    )) as { cause?: { cause?: { type?: string; message?: string } } } | undefined;
    expect({ type: failure?.cause?.cause?.type, message: failure?.cause?.cause?.message }).toEqual({
      type: 'RefundNotOwed',
      message: `charge ${chargeId} is not owed a refund: our records show no failure on the provider's side (the charge is charged)`,
    });
    expect(await snapshot()).toEqual(before);
    expect(await h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `${refundWorkflowId(chargeId)}%` } })).toEqual([]);

    // The reply goes on to the end and is kept: the charge is delivered, never refunded.
    let text = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += new TextDecoder().decode(chunk.value);
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    const delivered = await waitUntil(
      'the chat to be delivered',
      async () => {
        const c = await h.tdb.db.em.fork().findOne(InferenceCharge, { id: chargeId });
        return c?.state === 'delivered' ? c : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 50 },
    );
    expect(delivered).toMatchObject({ state: 'delivered', refundTx: null });
    expect(await snapshot()).toEqual(before);
  });

  test('withdrawal: a foreign gateway wallet, token or depositor with an inflated amount: failed, nothing signed', async () => {
    const before = await snapshot();
    const gatewayWallet = h.stack.gatewayWallet;
    const base: WithdrawalInput = {
      workflowId: '',
      organizationId: randomUUID(),
      apiKeyId: '',
      network: 'base-sepolia',
      gatewayWallet,
      token: h.stack.usdc,
      depositor: ours,
      amount: INFLATED.toString(),
      pollMs: 200,
    };
    for (const forgery of [{ gatewayWallet: thief }, { token: thief }, { depositor: attacker.address }]) {
      const input = { ...base, ...forgery, workflowId: `withdrawal:base-sepolia:${thief.toLowerCase()}:${randomUUID()}` };
      const rec = await h.temporal.workflow.execute('withdrawalWorkflow', { workflowId: input.workflowId, taskQueue, args: [input] });
      expect(rec).toMatchObject({
        state: 'failed',
        errorReason: 'withdrawal_rejected',
        message: 'the withdrawal names a gateway wallet, token or depositor other than the configured ones',
        initiateTransaction: null,
      });
    }
    expect(await snapshot()).toEqual(before);
  });
});

describe.each(oneDbKind('sqlite'))('forged top-up workflows (%s)', (kind) => {
  let t: TopupHarness;
  const GROSS = 2_000_000n;

  beforeAll(async () => {
    t = await startTopupHarness(kind, { relayerIndex: 1 });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** A top-up input as the gateway builds it for a fresh payer's authorization of GROSS, then forged by `forge`. */
  async function topUpInput(forge: (i: TopUpInput) => TopUpInput) {
    const payer = await t.freshPayer(GROSS);
    const { paymentPayload, paymentRequirements } = await exactPayment({
      buyer: payer,
      network: 'base',
      chainId: t.stack.chains.base.chainId,
      usdc: t.stack.usdc,
      facilitator: t.stack.facilitator,
      value: GROSS,
    });
    const a = paymentPayload.payload.authorization;
    const input: TopUpInput = {
      workflowId: topupWorkflowId(t.merchant, payer.address, a.nonce),
      merchant: t.merchant,
      merchantContract: DEVNET_MERCHANT_ADDRESS,
      buyer: payer.address,
      payer: payer.address,
      network: 'base',
      nonce: a.nonce.toLowerCase(),
      grossAmount: GROSS.toString(),
      fee: '0',
      bridgeFee: '0',
      netAmount: GROSS.toString(),
      relayer: t.relayer.address,
      settle: {
        workflowId: settleWorkflowId('base', a.from, a.nonce),
        organizationId: t.topup.TOPUP_ORGANIZATION_ID,
        apiKeyId: '',
        route: 'eip3009',
        network: 'base',
        payer: a.from,
        amount: a.value,
        paymentPayload: paymentPayload as Eip3009SettleInput['paymentPayload'],
        paymentRequirements: paymentRequirements as Eip3009SettleInput['paymentRequirements'],
        payout: t.relayer.address,
        fee: '0',
        feeRecipient: '0x0000000000000000000000000000000000000000',
      },
      createdAt: Date.now(),
    };
    return { payer, input: forge(input) };
  }

  test('top-up refund: an inflated deposit for a foreign buyer, or a deposit to a foreign contract: refunded what the chain delivered, nothing else moves', async () => {
    const thief = privateKeyToAccount(generatePrivateKey()).address;
    const forgeries = [
      // Pay 2 USDC, deposit 10^12 of the relayer's USDC to the thief's credit.
      await topUpInput((i) => ({ ...i, buyer: thief, netAmount: INFLATED.toString() })),
      // Pay 2 USDC, approve and "deposit" to the thief's own address (an allowance on the relayer's USDC).
      await topUpInput((i) => ({ ...i, buyer: thief, merchantContract: thief })),
    ];
    const relayerBefore = await t.usdcOf(t.relayer.address);
    for (const { payer, input } of forgeries) {
      const outcome = await t.temporal.workflow.execute('topUpWorkflow', {
        workflowId: input.workflowId,
        taskQueue: t.tdb.config.TEMPORAL_TASK_QUEUE,
        args: [input],
      });
      expect(outcome).toEqual({ state: 'refunded', errorReason: 'deposit_failed' });
      // The payer's own 2 USDC went to our relayer and came back: exactly where it started.
      expect(await t.usdcOf(payer.address)).toBe(GROSS);
      const row = (await t.rows([input.workflowId]))[0]!;
      expect(row.error).toMatch(/^deposit failed \(DepositNotBacked: /);
      expect(row.depositTx ?? null).toBeNull();
      expect(
        await t.tdb.db.em.fork().find(RelayerTransaction, { id: { $in: [`${input.workflowId}:approve`, `${input.workflowId}:deposit`] } }),
      ).toEqual([]);
    }
    expect(await t.usdcOf(t.relayer.address)).toBe(relayerBefore);
    expect(await t.usdcOf(thief)).toBe(0n);
    expect(await t.merchantBalance(thief)).toBe(0n);
    expect(await t.depositedEvents(thief)).toEqual([]);
    expect(
      await t.chain.readContract({ address: t.stack.usdc, abi: tokenAbi, functionName: 'allowance', args: [t.relayer.address, thief] }),
    ).toBe(0n);
  });
});

describe.each(oneDbKind('sqlite'))('a forged cross-chain settlement and its bridge refund (%s)', (kind) => {
  let h: SettleHarness;
  let attester: BridgeAttester;
  let dest: PublicClient;
  const VALUE = 2_000_000n;
  // The revenue wallet of this describe alone, so its deltas are exact.
  const revenueKey = generatePrivateKey();
  const revenue = privateKeyToAccount(revenueKey).address;

  beforeAll(async () => {
    const stack = readStackInfo();
    attester = await startStackAttester();
    h = await startSettleHarness(kind, {
      relayerIndex: 2,
      env: { BRIDGE_ATTESTATION_URL: attester.url, RECEIPT_WAIT_MS: '3000', REVENUE_WALLET_PRIVATE_KEY: revenueKey },
    });
    dest = createPublicClient({ transport: http(stack.chains['optimism-sepolia'].rpcUrl) }) as PublicClient;
    await rpc(stack.chains['base-sepolia'].rpcUrl, 'anvil_setBalance', [revenue, numberToHex(10n ** 20n)]);
  });
  afterAll(async () => {
    await h?.close();
    await attester?.stop();
  });

  const networks = () => buildNetworkTable(h.tdb.config.env);
  const fund = (to: Address, amount: bigint) => fundUsdc(h.stack.chains['base-sepolia'], h.stack.usdc, to, amount);
  const onDestination = (who: Address) =>
    dest.readContract({ address: h.stack.usdc, abi: tokenAbi, functionName: 'balanceOf', args: [who] });
  const authorizationUsed = (from: Address, nonce: Hex) =>
    h.chain.readContract({ address: h.stack.usdc, abi: tokenAbi, functionName: 'authorizationState', args: [from, nonce] });
  const organization = () => h.tdb.db.em.fork().findOneOrFail(Organization, { payoutWalletTest: h.payout.toLowerCase() });

  /** The input the API builds for VALUE signed by `payer` to the harness's organization, bridged to optimism-sepolia. */
  async function crossChainInput(payer: PrivateKeyAccount): Promise<CrossChainSettleInput> {
    const { paymentPayload, paymentRequirements } = await h.pay(payer, {
      value: VALUE,
      extra: { name: 'USDC', version: '2', destinationChainId: h.stack.chains['optimism-sepolia'].chainId },
    });
    const a = paymentPayload.payload.authorization;
    return {
      workflowId: settleWorkflowId('base-sepolia', a.from, a.nonce),
      organizationId: (await organization()).id,
      apiKeyId: '',
      route: 'eip3009-crosschain',
      network: 'base-sepolia',
      destinationNetwork: 'optimism-sepolia',
      sourceDomain: networks().get('base-sepolia')!.cctpDomain!,
      destinationDomain: networks().get('optimism-sepolia')!.cctpDomain!,
      paymentPayload: paymentPayload as CrossChainSettleInput['paymentPayload'],
      paymentRequirements: paymentRequirements as CrossChainSettleInput['paymentRequirements'],
      payout: h.payout,
      fee: '0',
      feeRecipient: '0x0000000000000000000000000000000000000000',
      maxBridgeFee: (VALUE / 100n).toString(),
    };
  }
  const start = (input: CrossChainSettleInput) =>
    h.temporal.workflow.start('crossChainSettlementWorkflow', {
      workflowId: input.workflowId,
      taskQueue: h.tdb.config.TEMPORAL_TASK_QUEUE,
      args: [input],
    });

  test('cross-chain settlement: started by hand with a foreign payout, fee recipient or organization: refused before the burn, nothing signed; the same authorization then settles with the real terms', async () => {
    const org = await organization();
    expect(org.platformFeeBps).toBe(0); // so any fee in the input is a forgery
    const thief = privateKeyToAccount(generatePrivateKey()).address;
    const payer = privateKeyToAccount(generatePrivateKey());
    await fund(payer.address, VALUE);
    const real = await crossChainInput(payer);
    const nonce = real.paymentPayload.payload.authorization.nonce as Hex;
    const relayer = TEST_ACCOUNTS.relayers[2]!.address;
    const snapshot = async () => ({
      payer: await h.balanceOf(payer.address),
      thief: await h.balanceOf(thief),
      thiefOnDestination: await onDestination(thief),
      payoutOnDestination: await onDestination(h.payout),
      relayerNonce: await h.chain.getTransactionCount({ address: relayer, blockTag: 'pending' }),
    });
    const before = await snapshot();
    expect(before.payer).toBe(VALUE);
    const forgeries: CrossChainSettleInput[] = [
      { ...real, payout: thief },
      { ...real, fee: (VALUE - 1n).toString(), feeRecipient: thief },
      // Our own paid services' organization, paying the thief instead of our revenue wallet.
      { ...real, organizationId: INFERENCE_ORGANIZATION_ID, payout: thief },
      // An organization that does not exist.
      { ...real, organizationId: randomUUID(), payout: thief },
    ];
    for (const forged of forgeries) {
      const run = await start(forged);
      // Bounded: a burned leg would wait for its mint, never end here.
      const err = await Promise.race([
        run.result().then(
          () => 'completed',
          (e: unknown) => e,
        ),
        new Promise((resolve) => setTimeout(() => resolve('still running after 60 s'), 60_000).unref()),
      ]);
      expect(settlementRejection(err)?.response).toEqual({
        success: false,
        errorReason: 'invalid_payment_requirements',
        transaction: '',
        network: 'base-sepolia',
        payer: payer.address,
      });
      expect(await h.tdb.db.em.fork().findOneOrFail(Settlement, { id: real.workflowId })).toMatchObject({
        state: 'rejected',
        errorReason: 'invalid_payment_requirements',
        transaction: null,
      });
      expect(await h.tdb.db.em.fork().findOne(RelayerTransaction, { id: { $like: `${real.workflowId}%` } })).toBeNull();
      expect(await authorizationUsed(payer.address, nonce)).toBe(false);
    }
    expect(await snapshot()).toEqual(before);

    // The same authorization with the organization's own terms is burned, minted and paid out.
    const outcome = (await (await start(real)).result()) as CrossChainOutcome;
    expect(outcome.response).toMatchObject({ success: true, payer: payer.address });
    // A standard transfer: the bridge keeps nothing (as Circle), and the organization charges no fee.
    expect(outcome.bridge).toMatchObject({ state: 'delivered', payoutAmount: VALUE.toString() });
    expect(await onDestination(h.payout)).toBe(before.payoutOnDestination + VALUE);
    expect({ thief: await h.balanceOf(thief), thiefOnDestination: await onDestination(thief) }).toEqual({
      thief: 0n,
      thiefOnDestination: 0n,
    });
  }, 180_000);

  test('bridge refund: a cross-chain settlement started by hand, its leg abandoned by hand: pays back only what its payer signed, to that payer', async () => {
    const payer = privateKeyToAccount(generatePrivateKey());
    await fund(payer.address, VALUE);
    // The wallet that would advance a refund holds ten times the payment: a forged amount could take it all.
    await fund(revenue, 10n * VALUE);
    const input = await crossChainInput(payer);
    const payoutBefore = await onDestination(h.payout);
    // An attestation the transmitter refuses: the leg cannot mint and waits for review.
    attester.attestWith(generatePrivateKey());
    try {
      const handle = await start(input);
      await waitUntil(
        'the settlement to wait for review',
        async () => (await h.tdb.db.em.fork().findOne(Settlement, { id: input.workflowId }))?.state === 'needs_review' || undefined,
        { timeoutMs: 60_000, intervalMs: 200 },
      );
      // The row records what was signed, whatever the input could have said.
      const row = await h.tdb.db.em.fork().findOneOrFail(Settlement, { id: input.workflowId });
      expect({ payer: row.payer, amount: row.amount }).toEqual({ payer: payer.address.toLowerCase(), amount: VALUE.toString() });
      expect(await h.balanceOf(payer.address)).toBe(0n);

      // Whoever reaches Temporal can also send the operator's update.
      const outcome = await handle.executeUpdate(abandonBridgeLegUpdate, { args: [{ operator: 'mallory', reason: 'forged' }] });
      expect(outcome.refund).toEqual({
        payee: payer.address.toLowerCase(),
        amount: VALUE.toString(),
        refundTx: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      });
    } finally {
      attester.attestWith();
    }
    // The payer got back exactly the VALUE it signed; the payout got nothing on the destination.
    expect(await h.balanceOf(payer.address)).toBe(VALUE);
    expect(await h.balanceOf(revenue)).toBe(9n * VALUE);
    expect(await onDestination(h.payout)).toBe(payoutBefore);
    const leg = await h.tdb.db.em.fork().findOneOrFail(BridgeTransfer, { settlementId: input.workflowId });
    expect({ state: leg.state, mintTx: leg.mintTx ?? null }).toEqual({ state: BRIDGE_ABANDONED, mintTx: null });
  }, 120_000);
});
