import { createPublicClient, http, keccak256, parseEventLogs, recoverAddress, type Address, type Hex, type PublicClient } from 'viem';
import { rpc } from '../../devnet/anvil';
import { attesterChainsFrom, startBridgeAttester, type BridgeAttester } from '../../devnet/bridge-attester';
import { waitUntil } from '../../devnet/process';
import {
  DEVNET_BRIDGE_ATTESTER_ADDRESS,
  DEVNET_BRIDGE_FEE_COLLECTOR,
  DEVNET_BRIDGE_TRANSMITTER_ADDRESS,
} from '../../src/chains/devnet-addresses';
import { tokenAbi } from '../../src/chains/evm/abi';
import { CCTP_FINALITY_FINALIZED, decodeBurnMessage, facilitatorBridgeAbi, messageTransmitterV2Abi } from '../../src/chains/evm/bridge';
import { BridgeTransfer } from '../../src/db/bridge-transfer';
import { RelayerTransaction, Settlement } from '../../src/db/entities';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';

/**
 * Cross-chain EIP-3009 (spec "POST /v1/settle" routing step 4, destination differs): a buyer signs
 * on base-sepolia for the seller's optimism-sepolia payout. The settle response carries the source
 * transaction as soon as it succeeded, while the attestation is still withheld by the attester
 * double; the mint and payout follow on the destination, exactly once, also across a worker SIGKILL.
 */
const OPTIMISM_SEPOLIA = 11155420;
const VALUE = 2_000_000n;
const BRIDGE_FEE = 2_000n; // the attester double's feeExecuted: 10 bps, under maxFee (BRIDGE_MAX_FEE_BPS 100 = 20,000)
const PLATFORM_FEE = 20_000n; // the organization's 100 bps of the signed value
const PAYOUT = VALUE - BRIDGE_FEE - PLATFORM_FEE;

describe.each(oneDbKind('postgres'))('cross-chain settlement (%s)', (kind) => {
  let h: SettleHarness;
  let attester: BridgeAttester;
  let dest: PublicClient;
  const buyer = TEST_ACCOUNTS.buyers[4];
  const relayer = TEST_ACCOUNTS.relayers[3];

  beforeAll(async () => {
    const stack = (await import('../support/stack-info')).readStackInfo();
    // This file's own attester double, so it can withhold attestations (the stack's one never does).
    attester = await startBridgeAttester({
      chains: attesterChainsFrom({
        RPC_URLS_BASE_SEPOLIA: stack.chains['base-sepolia'].rpcUrl,
        RPC_URLS_OPTIMISM_SEPOLIA: stack.chains['optimism-sepolia'].rpcUrl,
      }),
      held: true,
    });
    h = await startSettleHarness(kind, {
      relayerIndex: 3,
      platformFeeBps: 100,
      env: { BRIDGE_ATTESTATION_URL: attester.url, SETTLE_WAIT_MS: '5000' },
    });
    dest = createPublicClient({ transport: http(stack.chains['optimism-sepolia'].rpcUrl) });
  });
  afterAll(async () => {
    await rpc(h.stack.chains['optimism-sepolia'].rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
    await h?.close();
    await attester?.stop();
  });
  beforeEach(() => attester.hold());

  const pay = (extra: Record<string, unknown> = { name: 'USDC', version: '2', destinationChainId: OPTIMISM_SEPOLIA }) =>
    h.pay(buyer, { value: VALUE, extra });
  const destBalance = (who: Address) => dest.readContract({ address: h.stack.usdc, abi: tokenAbi, functionName: 'balanceOf', args: [who] });
  /** Messages from base-sepolia (domain 6) received by the destination's MessageTransmitterV2 after block `after`, by nonce if given. */
  const mints = async (nonce?: string | null, after = -1n) => {
    const logs = await dest.getLogs({ address: DEVNET_BRIDGE_TRANSMITTER_ADDRESS, fromBlock: 0n, toBlock: 'latest' });
    return parseEventLogs({ abi: messageTransmitterV2Abi, logs, eventName: 'MessageReceived' }).filter(
      (l) => l.args.sourceDomain === 6 && l.blockNumber > after && (nonce === undefined || l.args.nonce === nonce),
    );
  };
  const payouts = async (nonce: string | null | undefined) => {
    const logs = await dest.getLogs({ address: h.stack.facilitator, fromBlock: 0n, toBlock: 'latest' });
    return parseEventLogs({ abi: facilitatorBridgeAbi, logs, eventName: 'BridgePayout' }).filter(
      (l) => l.args.sourceDomain === 6 && l.args.bridgeNonce === nonce,
    );
  };
  /** The CCTP V2 burn message the source transaction emitted (through the source MessageTransmitterV2). */
  const burnOf = async (hash: Hex) => {
    const receipt = await h.chain.getTransactionReceipt({ hash });
    expect(receipt.status).toBe('success');
    const [sent] = parseEventLogs({ abi: messageTransmitterV2Abi, logs: receipt.logs, eventName: 'MessageSent' }).filter(
      (l) => l.address.toLowerCase() === DEVNET_BRIDGE_TRANSMITTER_ADDRESS.toLowerCase(),
    );
    return decodeBurnMessage(sent!.args.message);
  };
  const NONCE = /^0x[0-9a-f]{64}$/;
  const bridgeRow = (settlementId: string) => h.tdb.db.em.fork().findOne(BridgeTransfer, { settlementId });
  const delivered = (settlementId: string) =>
    waitUntil(
      'the bridge leg to be delivered',
      async () => {
        const row = await bridgeRow(settlementId);
        return row?.state === 'delivered' ? row : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );

  test('answers with the source transaction before the mint, then mints and pays out exactly once', async () => {
    const destStart = await dest.getBlockNumber({ cacheTime: 0 }); // deliveries after this block are this test's
    const body = await pay();
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const workflowId = settleWorkflowId('base-sepolia', buyer.address, nonce);
    const [buyerBefore, payoutBefore, feeBefore, bridgeFeeBefore] = await Promise.all([
      h.balanceOf(buyer.address),
      destBalance(h.payout),
      destBalance(h.feeRecipient),
      destBalance(DEVNET_BRIDGE_FEE_COLLECTOR),
    ]);

    const res = await h.settle(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      network: 'base-sepolia',
      payer: buyer.address,
    });
    const hash = res.body.transaction as Hex;

    // The source transaction pulled the buyer's authorization and burned it toward domain 2, through
    // TokenMessengerV2.depositForBurn: a CCTP V2 message, its nonce left for the attestation service.
    const burn = await burnOf(hash);
    expect(burn).toMatchObject({
      version: 1,
      sourceDomain: 6,
      destinationDomain: 2,
      nonce: `0x${'00'.repeat(32)}`,
      minFinalityThreshold: CCTP_FINALITY_FINALIZED,
      finalityThresholdExecuted: 0,
      body: { version: 1, amount: VALUE, maxFee: 20_000n, feeExecuted: 0n, hookData: '0x' },
    });
    expect(burn.body.mintRecipient.toLowerCase()).toBe(h.stack.facilitator.toLowerCase());
    expect(burn.destinationCaller.toLowerCase()).toBe(h.stack.facilitator.toLowerCase());
    expect(burn.body.messageSender.toLowerCase()).toBe(h.stack.facilitator.toLowerCase());
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - VALUE);
    // Early return: nothing has reached the destination yet (the attestation is withheld).
    expect(await mints(undefined, destStart)).toHaveLength(0);
    expect(await destBalance(h.payout)).toBe(payoutBefore);
    const row = await h.tdb.db.em.fork().findOneOrFail(Settlement, { id: workflowId });
    expect({ route: row.route, state: row.state, transaction: row.transaction }).toEqual({
      route: 'eip3009-crosschain',
      state: 'bridging',
      transaction: hash,
    });

    // A repeat while bridging answers the same.
    const repeat = await h.settle(body);
    expect(repeat.status).toBe(200);
    expect(repeat.body).toEqual(res.body);

    attester.release();
    const transfer = await delivered(workflowId);
    expect(transfer).toMatchObject({
      sourceNetwork: 'base-sepolia',
      destinationNetwork: 'optimism-sepolia',
      sourceDomain: 6,
      destinationDomain: 2,
      bridgeNonce: expect.stringMatching(NONCE),
      sourceTx: hash,
      amount: VALUE.toString(),
      received: (VALUE - BRIDGE_FEE).toString(),
      bridgeFee: BRIDGE_FEE.toString(),
      fee: PLATFORM_FEE.toString(),
      payoutAmount: PAYOUT.toString(),
      recipient: h.payout.toLowerCase(),
    });
    expect(await mints(transfer.bridgeNonce)).toHaveLength(1);
    expect(await payouts(transfer.bridgeNonce)).toHaveLength(1);
    const mintReceipt = await dest.getTransactionReceipt({ hash: transfer.mintTx as Hex });
    expect(mintReceipt.status).toBe('success');
    expect(await destBalance(h.payout)).toBe(payoutBefore + PAYOUT);
    expect(await destBalance(h.feeRecipient)).toBe(feeBefore + PLATFORM_FEE);
    expect(await destBalance(DEVNET_BRIDGE_FEE_COLLECTOR)).toBe(bridgeFeeBefore + BRIDGE_FEE);
    expect(await destBalance(h.stack.facilitator)).toBe(0n); // nothing left behind on the destination

    await waitUntil(
      'the settlement to be final',
      async () => (await h.tdb.db.em.fork().findOne(Settlement, { id: workflowId }))?.state === 'settled',
      {
        timeoutMs: 30_000,
        intervalMs: 100,
      },
    );
    const after = await h.settle(body);
    expect(after.status).toBe(200);
    expect(after.body).toEqual(res.body);
  });

  test('concurrent duplicates attach to one workflow: one burn, one mint, the same answer for all', async () => {
    const body = await pay();
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const workflowId = settleWorkflowId('base-sepolia', buyer.address, nonce);
    const buyerBefore = await h.balanceOf(buyer.address);

    const answers = await Promise.all([0, 1, 2].map(() => h.settle(body)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(answers[1]!.body).toEqual(answers[0]!.body);
    expect(answers[2]!.body).toEqual(answers[0]!.body);
    const logs = await h.chain.getLogs({ address: h.stack.facilitator, fromBlock: 0n, toBlock: 'latest' });
    expect(
      parseEventLogs({ abi: facilitatorBridgeAbi, logs, eventName: 'BridgeBurned' }).filter((l) => l.args.nonce === nonce),
    ).toHaveLength(1);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - VALUE);

    attester.release();
    const transfer = await delivered(workflowId);
    expect(await mints(transfer.bridgeNonce)).toHaveLength(1);
  });

  test("the stack's attester double answers in the Iris v2 shape, signed by the devnet attester", async () => {
    const base = h.stack.bridgeAttestationUrl!;
    const body = await pay();
    attester.release(); // this file's double; the stack's one below never withholds
    const res = await h.settle(body);
    const hash = res.body.transaction as Hex;
    const burn = await burnOf(hash);
    const get = async (path: string) => {
      const r = await fetch(`${base}${path}`);
      return { status: r.status, body: (await r.json()) as any };
    };
    const ok = await get(`/v2/messages/6?transactionHash=${hash}`);
    expect(ok.status).toBe(200);
    expect(ok.body.messages).toHaveLength(1);
    const [m] = ok.body.messages;
    expect(m).toMatchObject({
      eventNonce: expect.stringMatching(NONCE),
      cctpVersion: 2,
      status: 'complete',
      attestation: expect.stringMatching(/^0x[0-9a-f]{130}$/),
    });
    // The message as the service completes it: nonce assigned, finality executed, fee executed.
    expect(decodeBurnMessage(m.message)).toEqual({
      ...burn,
      nonce: m.eventNonce,
      finalityThresholdExecuted: CCTP_FINALITY_FINALIZED,
      body: { ...burn.body, feeExecuted: BRIDGE_FEE },
    });
    expect(m.decodedMessage).toMatchObject({
      nonce: m.eventNonce,
      decodedMessageBody: { amount: VALUE.toString(), feeExecuted: BRIDGE_FEE.toString() },
    });
    expect(await recoverAddress({ hash: keccak256(m.message), signature: m.attestation })).toBe(DEVNET_BRIDGE_ATTESTER_ADDRESS);
    expect(await get(`/v2/messages/6?transactionHash=0x${'00'.repeat(32)}`)).toEqual({
      status: 404,
      body: { error: 'Message hash not found' },
    });
    expect(await get(`/v2/messages/6?transactionHash=0x1234`)).toEqual({ status: 400, body: { error: 'invalid transactionHash' } });
    expect(await get(`/v2/messages/99?transactionHash=${hash}`)).toEqual({ status: 400, body: { error: 'unsupported source domain 99' } });
    await delivered(settleWorkflowId('base-sepolia', buyer.address, body.paymentPayload.payload.authorization.nonce));
  });

  test('a same-chain-only destination is refused', async () => {
    const body = await pay({ name: 'USDC', version: '2', destinationChainId: 5042002 }); // arc-testnet
    const res = await h.settle(body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      success: false,
      errorReason: 'cross_chain_not_supported',
      transaction: '',
      network: 'base-sepolia',
      payer: buyer.address,
    });
  });

  test('an unknown destination chain is refused', async () => {
    const body = await pay({ name: 'USDC', version: '2', destinationChainId: 999_999 });
    const res = await h.settle(body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      success: false,
      errorReason: 'unsupported_destination_chain',
      transaction: '',
      network: 'base-sepolia',
      payer: buyer.address,
    });
  });

  test('a payment refused before broadcast answers its reason, and a corrected retry runs again', async () => {
    const forged = await h.pay(buyer, {
      value: VALUE,
      signer: TEST_ACCOUNTS.buyers[0],
      extra: { name: 'USDC', version: '2', destinationChainId: OPTIMISM_SEPOLIA },
    });
    const res = await h.settle(forged);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      success: false,
      errorReason: 'invalid_exact_evm_payload_signature',
      transaction: '',
      network: 'base-sepolia',
      payer: buyer.address,
    });

    // The same authorization (nonce), now properly signed: the failed run does not block it.
    const good = await h.pay(buyer, {
      value: VALUE,
      nonce: forged.paymentPayload.payload.authorization.nonce as Hex,
      validBefore: BigInt(forged.paymentPayload.payload.authorization.validBefore),
      validAfter: BigInt(forged.paymentPayload.payload.authorization.validAfter),
      extra: { name: 'USDC', version: '2', destinationChainId: OPTIMISM_SEPOLIA },
    });
    attester.release();
    const ok = await h.settle(good);
    expect(ok.status).toBe(200);
    expect(ok.body.success).toBe(true);
    await delivered(settleWorkflowId('base-sepolia', buyer.address, good.paymentPayload.payload.authorization.nonce));
  });

  test('a source chain that does not mine: 202 pending with the source hash, then 200 with the same hash', async () => {
    const srcRpc = h.stack.chains['base-sepolia'].rpcUrl;
    const body = await pay();
    await rpc(srcRpc, 'evm_setAutomine', [false]);
    let pending;
    try {
      pending = await h.settleUntilBroadcast(body);
    } finally {
      await rpc(srcRpc, 'evm_mine', []);
      await rpc(srcRpc, 'evm_setAutomine', [true]);
    }
    expect(pending.status).toBe(202);
    expect(pending.body).toEqual({
      success: false,
      errorReason: 'settlement_pending',
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      network: 'base-sepolia',
      payer: buyer.address,
    });
    const final = await h.settleUntilFinal(body);
    expect(final.status).toBe(200);
    expect(final.body).toEqual({ success: true, transaction: pending.body.transaction, network: 'base-sepolia', payer: buyer.address });
    attester.release();
    await delivered(settleWorkflowId('base-sepolia', buyer.address, body.paymentPayload.payload.authorization.nonce));
  });

  test('the source chain id as destination settles on the source chain', async () => {
    const body = await pay({ name: 'USDC', version: '2', destinationChainId: 84532 });
    const res = await h.settleUntilFinal(body);
    expect(res.status).toBe(200);
    const row = await h.tdb.db.em
      .fork()
      .findOneOrFail(Settlement, { id: settleWorkflowId('base-sepolia', buyer.address, body.paymentPayload.payload.authorization.nonce) });
    expect(row.route).toBe('eip3009');
    expect(await h.settledEvents(buyer.address, body.paymentPayload.payload.authorization.nonce as Hex)).toBe(1);
  });

  test('worker killed between burn and mint: after restart the mint and payout happen exactly once', async () => {
    const destStart = await dest.getBlockNumber({ cacheTime: 0 }); // deliveries after this block are this test's
    const body = await pay();
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const workflowId = settleWorkflowId('base-sepolia', buyer.address, nonce);
    const payoutBefore = await destBalance(h.payout);
    const relayerDestNonce = await dest.getTransactionCount({ address: relayer.address });

    const res = await h.settle(body);
    expect(res.status).toBe(200);
    // The bridge leg is running and waiting for the attestation.
    await waitUntil('the bridge leg to wait for its attestation', async () => (await bridgeRow(workflowId))?.state === 'burned', {
      timeoutMs: 30_000,
      intervalMs: 100,
    });

    const killed = h.worker.child.pid!;
    await h.restartWorker({ kill: true });
    expect(() => process.kill(killed, 0)).toThrow();
    expect(await mints(undefined, destStart)).toHaveLength(0);

    attester.release();
    const transfer = await delivered(workflowId);
    expect(await mints(undefined, destStart)).toHaveLength(1);
    expect(await mints(transfer.bridgeNonce)).toHaveLength(1);
    expect(await payouts(transfer.bridgeNonce)).toHaveLength(1);
    expect(transfer.payoutAmount).toBe(PAYOUT.toString());
    expect(await destBalance(h.payout)).toBe(payoutBefore + PAYOUT);
    // One destination transaction from this relayer, recorded once.
    expect(await dest.getTransactionCount({ address: relayer.address })).toBe(relayerDestNonce + 1);
    const recorded = await h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: 'bridge:%' }, hash: transfer.mintTx! });
    expect(recorded).toHaveLength(1);
    const repeat = await h.settle(body);
    expect(repeat.body).toEqual(res.body);
  });

  test('worker killed with the mint in the mempool: the same transaction completes, no second mint', async () => {
    const destRpc = h.stack.chains['optimism-sepolia'].rpcUrl;
    const body = await pay();
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const workflowId = settleWorkflowId('base-sepolia', buyer.address, nonce);
    const payoutBefore = await destBalance(h.payout);
    const relayerDestNonce = await dest.getTransactionCount({ address: relayer.address });

    const res = await h.settle(body);
    expect(res.status).toBe(200);

    await rpc(destRpc, 'evm_setAutomine', [false]);
    attester.release();
    const minting = await waitUntil(
      'the mint to be broadcast',
      async () => {
        const row = await bridgeRow(workflowId);
        return row?.state === 'minting' && row.mintTx ? row : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    expect((await dest.getTransaction({ hash: minting.mintTx as Hex })).blockNumber).toBeNull();

    await h.restartWorker({ kill: true });
    await rpc(destRpc, 'evm_mine', []);
    await rpc(destRpc, 'evm_setAutomine', [true]);
    const transfer = await delivered(workflowId);
    expect(transfer.mintTx).toBe(minting.mintTx);
    expect(await mints(transfer.bridgeNonce)).toHaveLength(1);
    expect(await destBalance(h.payout)).toBe(payoutBefore + PAYOUT);
    expect(await dest.getTransactionCount({ address: relayer.address })).toBe(relayerDestNonce + 1);
  });
});
