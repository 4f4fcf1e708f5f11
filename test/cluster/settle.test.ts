import type { Client } from '@temporalio/client';
import { createPublicClient, http, parseEventLogs, type Address, type Hex, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { canConnect, waitUntil } from '../../devnet/process';
import { devnetAddresses } from '../../devnet/deploy';
import { DEMO_BUYERS } from '../../devnet/demo-accounts';
import { rpc } from '../../devnet/anvil';
import { DEVNET_BRIDGE_FEE_COLLECTOR } from '../../src/chains/devnet-addresses';
import { X402State, X402Stuck } from '../../src/temporal/search-attributes';
import { stuckScanScheduleId } from '../../src/temporal/stuck-scan';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import {
  API_1,
  API_2,
  clusterPids,
  connectClusterTemporal,
  newClusterSeller,
  readClusterInfo,
  type ClusterInfo,
  type ClusterSeller,
} from '../support/cluster';
import { exactPayment } from '../support/payments';
import { facilitatorAbi, tokenAbi } from '../../src/chains/evm/abi';

/**
 * Settlement on `npm run cluster` (the Temporal server on PostgreSQL with 4 history shards, two
 * workers with their own relayer lanes, two API processes sharing Redis): the same answers and the
 * same exactly-once effects as on the dev server, whichever API a request reaches, while one dies.
 */
const BASE_SEPOLIA = { network: 'base-sepolia', chainId: 84532, rpcUrl: 'http://127.0.0.1:8545' };
const OPTIMISM_SEPOLIA = { chainId: 11155420, rpcUrl: 'http://127.0.0.1:8546' };
const VALUE = 1_000_000n;
const BRIDGE_FEE = 0n; // the attester double's feeExecuted of a standard transfer: none, as Circle's

let info: ClusterInfo;
let temporal: Client;
let seller: ClusterSeller;
let source: PublicClient;
let destination: PublicClient;
const payout = privateKeyToAccount(generatePrivateKey()).address; // fresh, so balance deltas are exact
const buyer = privateKeyToAccount(DEMO_BUYERS[1]!.privateKey);
const { usdc, facilitator } = devnetAddresses();

const settle = (api: string, body: unknown) => seller.settle(api, body);
const settleUntilFinal = (api: string, body: unknown) => seller.settleUntilFinal(api, body);
const pay = (extra?: Record<string, unknown>) =>
  exactPayment({ buyer, network: BASE_SEPOLIA.network, chainId: BASE_SEPOLIA.chainId, usdc, facilitator, value: VALUE, extra });
const balanceOf = (chain: PublicClient, who: Address) =>
  chain.readContract({ address: usdc, abi: tokenAbi, functionName: 'balanceOf', args: [who] });
async function settledEvents(nonce: Hex): Promise<number> {
  const logs = await source.getLogs({ address: facilitator, fromBlock: 0n, toBlock: 'latest' });
  return parseEventLogs({ abi: facilitatorAbi, logs, eventName: 'Settled' }).filter(
    (l) => l.args.from.toLowerCase() === buyer.address.toLowerCase() && l.args.nonce === nonce,
  ).length;
}
/** Executions with this workflow id that visibility lists (eventually consistent: waited for). */
async function listedRuns(workflowId: string, expected: number): Promise<number> {
  return waitUntil(
    `visibility to list ${expected} run(s) of ${workflowId}`,
    async () => {
      let n = 0;
      for await (const _ of temporal.workflow.list({ query: `WorkflowId = '${workflowId}'` })) n++;
      return n === expected ? n : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 250 },
  );
}

beforeAll(async () => {
  info = readClusterInfo();
  temporal = await connectClusterTemporal(info);
  source = createPublicClient({ transport: http(BASE_SEPOLIA.rpcUrl) });
  destination = createPublicClient({ transport: http(OPTIMISM_SEPOLIA.rpcUrl) });
  // One organization; its API key works on both APIs.
  seller = await newClusterSeller(payout);
});

afterAll(async () => {
  await temporal?.connection.close();
});

test('a duplicate storm over both APIs settles once: every answer names the one transaction, one run, one transfer', async () => {
  const body = await pay();
  const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
  const workflowId = settleWorkflowId(BASE_SEPOLIA.network, buyer.address, nonce);
  const [buyerBefore, payoutBefore] = await Promise.all([balanceOf(source, buyer.address), balanceOf(source, payout)]);

  const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => settleUntilFinal(i % 2 ? API_2 : API_1, body)));

  expect(answers.map((a) => a.status)).toEqual(Array(16).fill(200));
  const transactions = new Set(answers.map((a) => a.body.transaction));
  expect(transactions.size).toBe(1);
  expect(answers[0]!.body).toEqual({
    success: true,
    transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    network: 'base-sepolia',
    payer: buyer.address,
  });
  expect(await settledEvents(nonce)).toBe(1);
  expect(await balanceOf(source, buyer.address)).toBe(buyerBefore - VALUE);
  expect(await balanceOf(source, payout)).toBe(payoutBefore + VALUE);
  expect((await temporal.workflow.getHandle(workflowId).describe()).status.name).toBe('COMPLETED');
  expect(await listedRuns(workflowId, 1)).toBe(1);
});

test('a cross-chain settlement answers with the source transaction, then pays out on the destination once', async () => {
  const body = await pay({ name: 'USDC', version: '2', destinationChainId: OPTIMISM_SEPOLIA.chainId });
  const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
  const [before, feesBefore] = await Promise.all([balanceOf(destination, payout), balanceOf(destination, DEVNET_BRIDGE_FEE_COLLECTOR)]);

  const res = await settleUntilFinal(API_2, body);

  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    success: true,
    transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    network: 'base-sepolia',
    payer: buyer.address,
  });
  expect(await settledEvents(nonce)).toBe(0); // the source call burns toward the destination instead of paying out
  // The attester double attests; a worker mints and pays out on optimism-sepolia.
  const after = await waitUntil(
    'the cross-chain payout on optimism-sepolia',
    async () => {
      const b = await balanceOf(destination, payout);
      return b > before ? b : undefined;
    },
    { timeoutMs: 90_000, intervalMs: 250 },
  );
  expect(after).toBe(before + VALUE - BRIDGE_FEE);
  expect(await balanceOf(destination, DEVNET_BRIDGE_FEE_COLLECTOR)).toBe(feesBefore + BRIDGE_FEE);
});

test('/v1/settle is answered by one API while the other is killed, and a request cut off with it is answered by the survivor', async () => {
  const pids = clusterPids(info);
  expect(pids['api-2']).toEqual(expect.any(Number));
  const cut = await pay();
  const other = await pay();
  const cutNonce = cut.paymentPayload.payload.authorization.nonce as Hex;

  // A request to api-2 and api-2's death at once; another payment to api-1 meanwhile.
  const toDying = settle(API_2, cut).then(
    (r) => r.status,
    () => 'connection lost' as const,
  );
  const toSurvivor = settle(API_1, other);
  process.kill(pids['api-2']!, 'SIGKILL');

  const answered = (await toSurvivor).status === 202 ? await settleUntilFinal(API_1, other) : await toSurvivor;
  expect(answered.status).toBe(200);
  expect(answered.body.success).toBe(true);
  expect(await canConnect('127.0.0.1', 4031, 500)).toBe(false);
  // The seller retries the cut-off request on the surviving API: one workflow, one transfer, whatever api-2 had started.
  expect(['connection lost', 200, 202]).toContain(await toDying);
  const retried = await settleUntilFinal(API_1, cut);
  expect(retried.status).toBe(200);
  expect(retried.body.success).toBe(true);
  expect(await settledEvents(cutNonce)).toBe(1);
});

// The cluster runs with STUCK_AFTER_SECONDS=1 (test/support/cluster-setup.ts); base-sepolia stops mining
// for this test only, so it runs last.
test('a settlement held unmined is flagged by the stuck scan, X402Stuck=true is found by a visibility query, and it then settles once', async () => {
  const body = await pay();
  const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
  const workflowId = settleWorkflowId(BASE_SEPOLIA.network, buyer.address, nonce);
  const handle = temporal.workflow.getHandle(workflowId);
  try {
    await rpc(BASE_SEPOLIA.rpcUrl, 'evm_setAutomine', [false]);
    const pending = await waitUntil(
      'a pending answer with the transaction hash',
      async () => {
        const res = await settle(API_1, body);
        return res.status === 202 && res.body.transaction ? res : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    await waitUntil(
      'the settlement to show X402State=submitted',
      async () => (await handle.describe()).typedSearchAttributes.get(X402State) === 'submitted',
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    // The scan's schedule (every minute, created by the first worker) runs now rather than at the minute.
    await temporal.schedule.getHandle(stuckScanScheduleId('x402-settlement')).trigger();
    const flagged = async () => {
      const ids: string[] = [];
      for await (const wf of temporal.workflow.list({ query: `X402Stuck = true AND WorkflowId = '${workflowId}'` }))
        ids.push(wf.workflowId);
      return ids.length > 0 && ids;
    };
    // Visibility on PostgreSQL lags the workflow's own upsert: wait for the query, not for a time.
    expect(await waitUntil('X402Stuck=true in visibility', flagged, { timeoutMs: 60_000, intervalMs: 250 })).toEqual([workflowId]);
    expect((await handle.describe()).typedSearchAttributes.get(X402Stuck)).toBe(true);

    await rpc(BASE_SEPOLIA.rpcUrl, 'evm_mine', []);
    await rpc(BASE_SEPOLIA.rpcUrl, 'evm_setAutomine', [true]);
    const final = await settleUntilFinal(API_1, body);
    expect(final.status).toBe(200);
    expect(final.body).toEqual({ success: true, transaction: pending.body.transaction, network: 'base-sepolia', payer: buyer.address });
    expect(await settledEvents(nonce)).toBe(1);
    expect((await handle.describe()).typedSearchAttributes.get(X402Stuck)).toBeUndefined();
  } finally {
    await rpc(BASE_SEPOLIA.rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
  }
});
