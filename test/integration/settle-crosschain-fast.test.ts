import { temporal } from '@temporalio/proto';
import { createPublicClient, http, parseEventLogs, type Address, type Hex, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { BridgeAttester } from '../../devnet/bridge-attester';
import { startStackAttester } from '../support/stack-info';
import { waitUntil } from '../../devnet/process';
import { startRpcProviderDouble, type RpcProviderDouble } from '../../devnet/rpc-provider-double';
import { DEVNET_BRIDGE_TRANSMITTER_ADDRESS } from '../../src/chains/devnet-addresses';
import { facilitatorAbi, messageTransmitterV2Abi, tokenAbi } from '../../src/chains/evm/abi';
import { CCTP_FINALITY_FAST, CCTP_FINALITY_FINALIZED, decodeBurnMessage } from '../../src/chains/evm/bridge';
import { BridgeTransfer } from '../../src/db/bridge-transfer';
import { RelayerTransaction } from '../../src/db/entities';
import { X402State } from '../../src/temporal/search-attributes';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { oneDbKind } from '../support/db';
import { fundUsdc } from '../support/evm';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';

/**
 * Fast finality (BRIDGE_FINALITY_BASE_SEPOLIA=fast): before each burn the worker reads the route's
 * fast fee from the attestation service (this file's double, `GET /v2/burn/USDC/fees/6/2`) and burns
 * with `minFinalityThreshold` 1000 and Circle's client's `maxFee` for it (10 bps of 2 USDC = 2,000,
 * +10% = 2,200); the destination mints the value less the executed fee, once. The fee read is in the
 * workflow's history: a worker SIGKILLed between it and the burn is replaced by one that burns with
 * it, without asking again. A fee endpoint that does not answer holds the settlement (nothing burned,
 * no guess); a fast fee over BRIDGE_MAX_FEE_BPS (100 bps) burns at standard, which Circle does not charge.
 */
const { EventType } = temporal.api.enums.v1;
const OPTIMISM_SEPOLIA = 11155420;
const VALUE = 2_000_000n;
const FAST_FEE = 2_000n; // the double's 10 bps, executed on the destination
const FAST_MAX_FEE = 2_200n; // what Circle's client would burn with: the fee + 10%
const BOUND = 20_000n; // BRIDGE_MAX_FEE_BPS (100) of the value
const PLATFORM_FEE = 20_000n; // the organization's 100 bps
const FEES_PATH = '/v2/burn/USDC/fees/6/2';

describe.each(oneDbKind('sqlite'))('cross-chain settlement at fast finality (%s)', (kind) => {
  let h: SettleHarness;
  let attester: BridgeAttester;
  let provider: RpcProviderDouble;
  let dest: PublicClient;

  beforeAll(async () => {
    const stack = (await import('../support/stack-info')).readStackInfo();
    attester = await startStackAttester();
    provider = await startRpcProviderDouble({ upstream: stack.chains['base-sepolia'].rpcUrl });
    h = await startSettleHarness(kind, {
      relayerIndex: 3,
      platformFeeBps: 100,
      env: {
        RPC_URLS_BASE_SEPOLIA: provider.url, // the source chain through the provider double (the kill test holds the burn)
        BRIDGE_ATTESTATION_URL: attester.url,
        BRIDGE_FINALITY_BASE_SEPOLIA: 'fast',
        SETTLE_WAIT_MS: '5000',
        RECEIPT_WAIT_MS: '3000',
      },
    });
    dest = createPublicClient({ transport: http(stack.chains['optimism-sepolia'].rpcUrl) }) as PublicClient;
  });
  afterAll(async () => {
    await h?.close();
    await attester?.stop();
    await provider?.stop();
  });
  afterEach(() => {
    attester.feesDown(false);
    attester.setFastFee(10);
    provider.setRules([]);
  });

  const destBalance = (who: Address) => dest.readContract({ address: h.stack.usdc, abi: tokenAbi, functionName: 'balanceOf', args: [who] });
  /** A fresh payer's signed cross-chain payment (base-sepolia to optimism-sepolia) and its workflow id. */
  const payment = async () => {
    const payer = privateKeyToAccount(generatePrivateKey());
    await fundUsdc(h.stack.chains['base-sepolia'], h.stack.usdc, payer.address, VALUE);
    const body = await h.pay(payer, { value: VALUE, extra: { name: 'USDC', version: '2', destinationChainId: OPTIMISM_SEPOLIA } });
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    return { payer, body, nonce, id: settleWorkflowId('base-sepolia', payer.address, nonce) };
  };
  /** The facilitator's BridgeBurned events of this authorization on the source chain, and the burn message of each. */
  const burnsOf = async (nonce: Hex) => {
    const logs = await h.chain.getLogs({ address: h.stack.facilitator, fromBlock: 0n, toBlock: 'latest' });
    const burned = parseEventLogs({ abi: facilitatorAbi, logs, eventName: 'BridgeBurned' }).filter((l) => l.args.nonce === nonce);
    return Promise.all(
      burned.map(async (l) => {
        const receipt = await h.chain.getTransactionReceipt({ hash: l.transactionHash });
        const [sent] = parseEventLogs({ abi: messageTransmitterV2Abi, logs: receipt.logs, eventName: 'MessageSent' });
        return { hash: l.transactionHash, message: decodeBurnMessage(sent!.args.message) };
      }),
    );
  };
  const mintsOf = async (bridgeNonce: string | null | undefined) => {
    const logs = await dest.getLogs({ address: DEVNET_BRIDGE_TRANSMITTER_ADDRESS, fromBlock: 0n, toBlock: 'latest' });
    return parseEventLogs({ abi: messageTransmitterV2Abi, logs, eventName: 'MessageReceived' }).filter(
      (l) => l.args.sourceDomain === 6 && l.args.nonce === bridgeNonce,
    );
  };
  const delivered = (id: string, timeoutMs = 60_000) =>
    waitUntil(
      'the bridge leg to be delivered',
      async () => {
        const row = await h.tdb.db.em.fork().findOne(BridgeTransfer, { settlementId: id });
        return row?.state === 'delivered' ? row : undefined;
      },
      { timeoutMs, intervalMs: 200 },
    );
  const burnRecord = (id: string) => h.tdb.db.em.fork().findOne(RelayerTransaction, { id: `${id}:burn` });
  /** The workflow's activities, by type, with the result of each completed one. */
  const activitiesOf = async (id: string) => {
    const events = (await h.temporal.workflow.getHandle(id).fetchHistory()).events ?? [];
    const types = new Map<string, string>();
    const done: { type: string; result?: unknown }[] = [];
    for (const e of events) {
      if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
        types.set(String(e.eventId), e.activityTaskScheduledEventAttributes!.activityType!.name!);
      if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
        const a = e.activityTaskCompletedEventAttributes!;
        const data = a.result?.payloads?.[0]?.data;
        done.push({
          type: types.get(String(a.scheduledEventId))!,
          result: data?.length ? JSON.parse(Buffer.from(data).toString('utf8')) : undefined, // a void result has no data
        });
      }
    }
    return { scheduled: [...types.values()], completed: done };
  };
  const FAST_TERMS = { finality: 'fast', minFinalityThreshold: CCTP_FINALITY_FAST, maxFee: FAST_MAX_FEE.toString() };

  test('reads the fee from the double before the burn, burns at threshold 1000 with maxFee 2,200, and mints the value less the fee once', async () => {
    const t = await payment();
    const asked = attester.feeRequests.length;
    const payoutBefore = await destBalance(h.payout);

    const res = await h.settle(t.body);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, network: 'base-sepolia', payer: t.payer.address });
    expect(attester.feeRequests.slice(asked)).toEqual([FEES_PATH]);
    const history = await activitiesOf(t.id);
    expect(history.scheduled.slice(0, 3)).toEqual(['verifyCrossChainPayment', 'readBridgeBurnTerms', 'submitBridgeBurn']);
    expect(history.completed.find((a) => a.type === 'readBridgeBurnTerms')!.result).toEqual(FAST_TERMS);

    const burns = await burnsOf(t.nonce);
    expect(burns.map((b) => b.hash)).toEqual([res.body.transaction]);
    expect(burns[0]!.message).toMatchObject({ minFinalityThreshold: CCTP_FINALITY_FAST, body: { amount: VALUE, maxFee: FAST_MAX_FEE } });

    const leg = await delivered(t.id);
    expect(leg).toMatchObject({
      received: (VALUE - FAST_FEE).toString(),
      bridgeFee: FAST_FEE.toString(),
      fee: PLATFORM_FEE.toString(),
      payoutAmount: (VALUE - FAST_FEE - PLATFORM_FEE).toString(),
    });
    const mints = await mintsOf(leg.bridgeNonce);
    expect(mints).toHaveLength(1);
    expect(mints[0]!.args.finalityThresholdExecuted).toBe(CCTP_FINALITY_FAST);
    expect(await destBalance(h.payout)).toBe(payoutBefore + VALUE - FAST_FEE - PLATFORM_FEE);
  });

  test('the fee endpoint down: the settlement waits and asks again, nothing burned; once it answers the burn carries the read fee', async () => {
    attester.feesDown(true);
    const t = await payment();
    const asked = attester.feeRequests.length;

    const pending = await h.settle(t.body);
    expect(pending.status).toBe(202);
    expect(pending.body).toMatchObject({ success: false, errorReason: 'settlement_pending', transaction: '' });
    await waitUntil('the worker to ask the fee endpoint three times', async () => attester.feeRequests.length - asked >= 3, {
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    // Unknown is not failure: the run waits before its burn, nothing signed, nothing pulled.
    const handle = h.temporal.workflow.getHandle(t.id);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    expect((await handle.describe()).typedSearchAttributes.get(X402State)).toBe('verifying');
    expect(await burnRecord(t.id)).toBeNull();
    expect(await h.balanceOf(t.payer.address)).toBe(VALUE);
    expect((await activitiesOf(t.id)).scheduled).toEqual(['verifyCrossChainPayment', 'readBridgeBurnTerms']);

    attester.feesDown(false);
    const done = await h.settleUntilFinal(t.body);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ success: true, payer: t.payer.address });
    const burns = await burnsOf(t.nonce);
    expect(burns).toHaveLength(1);
    expect(burns[0]!.message).toMatchObject({ minFinalityThreshold: CCTP_FINALITY_FAST, body: { maxFee: FAST_MAX_FEE } });
    const leg = await delivered(t.id);
    expect(leg.bridgeFee).toBe(FAST_FEE.toString());
    expect(await mintsOf(leg.bridgeNonce)).toHaveLength(1);
  });

  test('a fast fee over BRIDGE_MAX_FEE_BPS burns at standard: threshold 2000, maxFee the bound, minted in full', async () => {
    attester.setFastFee(150); // 150 bps of 2 USDC = 30,000, +10% = 33,000: over the bound 20,000
    const t = await payment();
    const asked = attester.feeRequests.length;
    const payoutBefore = await destBalance(h.payout);

    const res = await h.settle(t.body);
    expect(res.status).toBe(200);
    expect(attester.feeRequests.slice(asked)).toEqual([FEES_PATH]);
    expect((await activitiesOf(t.id)).completed.find((a) => a.type === 'readBridgeBurnTerms')!.result).toEqual({
      finality: 'standard',
      minFinalityThreshold: CCTP_FINALITY_FINALIZED,
      maxFee: BOUND.toString(),
      fellBack: "fast fee 33000 (150 bps, with Circle's 10% buffer) is over the bound 20000",
    });
    const burns = await burnsOf(t.nonce);
    expect(burns).toHaveLength(1);
    expect(burns[0]!.message).toMatchObject({ minFinalityThreshold: CCTP_FINALITY_FINALIZED, body: { maxFee: BOUND } });
    const leg = await delivered(t.id);
    expect(leg).toMatchObject({ bridgeFee: '0', received: VALUE.toString(), payoutAmount: (VALUE - PLATFORM_FEE).toString() });
    expect(await mintsOf(leg.bridgeNonce)).toHaveLength(1);
    expect(await destBalance(h.payout)).toBe(payoutBefore + VALUE - PLATFORM_FEE);
  });

  test('worker SIGKILLed between the fee read and the burn: the next worker burns once with the fee read before, without asking again; one mint', async () => {
    // The burn's gas estimate hangs at the provider: the terms are read and recorded, nothing is signed yet.
    provider.setRules([{ methods: ['eth_estimateGas'], fault: 'hang', probability: 1 }]);
    const t = await payment();
    const asked = attester.feeRequests.length;
    const payoutBefore = await destBalance(h.payout);

    const pending = await h.settle(t.body);
    expect(pending.status).toBe(202);
    await waitUntil(
      'the burn to wait on its gas estimate after the fee read',
      async () =>
        provider.calls.some((c) => c.method === 'eth_estimateGas' && c.fault === 'hang') &&
        (await activitiesOf(t.id)).completed.some((a) => a.type === 'readBridgeBurnTerms'),
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    expect(attester.feeRequests.slice(asked)).toEqual([FEES_PATH]);
    expect(await burnRecord(t.id)).toBeNull();
    expect(await burnsOf(t.nonce)).toHaveLength(0);

    const killed = h.worker.child.pid!;
    await h.restartWorker({ kill: true, whileDown: async () => provider.setRules([]) });
    expect(() => process.kill(killed, 0)).toThrow();

    const done = await h.settleUntilFinal(t.body, 150_000); // the killed attempt's 60 s start-to-close runs out first
    expect(done.status).toBe(200);
    const burns = await burnsOf(t.nonce);
    expect(burns.map((b) => b.hash)).toEqual([done.body.transaction]);
    expect(burns[0]!.message).toMatchObject({ minFinalityThreshold: CCTP_FINALITY_FAST, body: { maxFee: FAST_MAX_FEE } });
    expect(attester.feeRequests.slice(asked)).toEqual([FEES_PATH]); // the new worker did not ask again
    const history = await activitiesOf(t.id);
    expect(history.scheduled.filter((a) => a === 'readBridgeBurnTerms')).toHaveLength(1);

    const leg = await delivered(t.id);
    expect(leg.bridgeFee).toBe(FAST_FEE.toString());
    expect(await mintsOf(leg.bridgeNonce)).toHaveLength(1);
    expect(await destBalance(h.payout)).toBe(payoutBefore + VALUE - FAST_FEE - PLATFORM_FEE);
  });
});
