/**
 * The two baselines of bench/settle.ts, on the same anvil and in the same run as the api rows:
 *   - floor: the buyers' `transferWithAuthorization` sent straight to the token from one relayer
 *     account, nonces counted locally (no HTTP, no verification, no database, no workflow);
 *   - orchestration floor: the same call as the one local activity of a tiny workflow
 *     (bench/orchestration-floor/), through the write-ahead relayer: the cheapest durable path.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';
import { encodeFunctionData, keccak256, parseEventLogs, type Address, type Hex, type LocalAccount, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { transferWithAuthorizationTypedData } from '../src/schemes/eip3009/typed-data';
import { TEST_ACCOUNTS } from '../test/support/accounts';
import { waitForReceipt } from '../test/support/evm';
import { mutex, runClosedLoop, type PhaseResult } from './measure';
import { tokenAbi } from '../src/chains/evm/abi';

export interface FloorChain {
  network: 'base-sepolia' | 'optimism-sepolia';
  chain: PublicClient;
  chainId: number;
  usdc: Address;
  value: bigint;
}

interface SignedCall {
  data: Hex;
  from: Address;
  nonce: Hex;
}

/** N buyer authorizations to a fresh seller (untimed), round-robin over the funded buyers, as calldata. */
async function signCalls(c: FloorChain, n: number): Promise<{ seller: Address; calls: SignedCall[] }> {
  const seller = privateKeyToAccount(generatePrivateKey()).address;
  const now = BigInt(Math.floor(Date.now() / 1000));
  const buyers = TEST_ACCOUNTS.buyers;
  const calls = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const buyer = buyers[i % buyers.length];
      const nonce = `0x${randomBytes(32).toString('hex')}` as Hex;
      const [validAfter, validBefore] = [now - 600n, now + 3600n];
      const typed = transferWithAuthorizationTypedData(
        { name: 'USDC', version: '2', chainId: c.chainId, verifyingContract: c.usdc },
        { from: buyer.address, to: seller, value: c.value.toString(), validAfter: `${validAfter}`, validBefore: `${validBefore}`, nonce },
      );
      const signature = await buyer.signTypedData(typed);
      const data = encodeFunctionData({
        abi: tokenAbi,
        functionName: 'transferWithAuthorization',
        args: [buyer.address, seller, c.value, validAfter, validBefore, nonce, signature],
      });
      return { data, from: buyer.address, nonce };
    }),
  );
  return { seller, calls };
}

/** Confirmed = AuthorizationUsed events of these (authorizer, nonce) pairs, capped by the seller's balance. */
async function countOnChain(c: FloorChain, fromBlock: bigint, seller: Address, calls: SignedCall[], notes: string[]): Promise<number> {
  const wanted = new Set(calls.map((x) => `${x.from.toLowerCase()}:${x.nonce}`));
  const logs = await c.chain.getLogs({ address: c.usdc, fromBlock, toBlock: 'latest' });
  const seen = new Set<string>();
  for (const l of parseEventLogs({ abi: tokenAbi, logs, eventName: 'AuthorizationUsed' })) {
    const k = `${l.args.authorizer.toLowerCase()}:${l.args.nonce}`;
    if (wanted.has(k)) seen.add(k);
  }
  const balance = await c.chain.readContract({ address: c.usdc, abi: tokenAbi, functionName: 'balanceOf', args: [seller] });
  if (balance !== BigInt(seen.size) * c.value) notes.push(`seller balance ${balance} != ${seen.size} × ${c.value}`);
  return Math.min(seen.size, Number(balance / c.value));
}

function countErrors(errors: Map<string, number>, err: unknown): void {
  const msg = (err as Error).message.split('\n')[0];
  errors.set(msg, (errors.get(msg) ?? 0) + 1);
}

/**
 * The floor: from **one** relayer account; signing and `eth_sendRawTransaction` one at a time in
 * nonce order (anvil's automine returns before the block exists), then the receipt polled with a
 * back-off from 1 ms, as the service's relayer does. One gas limit and fee for the whole row.
 */
export async function benchFloor(c: FloorChain, relayer: LocalAccount, n: number, concurrency: number): Promise<PhaseResult> {
  const { seller, calls } = await signCalls(c, n);
  // Estimated on the first call, which also pays the seller's zero-to-non-zero balance write.
  const gas = ((await c.chain.estimateGas({ account: relayer.address, to: c.usdc, data: calls[0].data })) * 3n) / 2n;
  const fees = await c.chain.estimateFeesPerGas();
  let nextNonce = await c.chain.getTransactionCount({ address: relayer.address, blockTag: 'pending' });
  const serialized = mutex();
  const fromBlock = await c.chain.getBlockNumber();

  const latencies: number[] = new Array(n);
  const errors = new Map<string, number>();
  let reverted = 0;
  const wallMs = await runClosedLoop(n, concurrency, async (i) => {
    const t = performance.now();
    try {
      const hash = await serialized(async () => {
        const rawTx = await relayer.signTransaction({
          chainId: c.chainId,
          type: 'eip1559',
          to: c.usdc,
          data: calls[i].data,
          nonce: nextNonce,
          gas,
          maxFeePerGas: fees.maxFeePerGas,
          maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        });
        await c.chain.sendRawTransaction({ serializedTransaction: rawTx });
        nextNonce++;
        return keccak256(rawTx);
      });
      const receipt = await waitForReceipt(c.chain, hash, { timeoutMs: 60_000, maxDelayMs: 250 }); // as the relayer polls
      if (receipt.status !== 'success') reverted++;
    } catch (err) {
      countErrors(errors, err);
    }
    latencies[i] = performance.now() - t;
  });

  const notes: string[] = [];
  for (const [msg, count] of errors) notes.push(`${count} × ${msg}`);
  if (reverted) notes.push(`${reverted} reverted`);
  const confirmed = await countOnChain(c, fromBlock, seller, calls, notes);
  return { mode: 'floor', concurrency, n, wallMs, latencies, confirmed, finalConfirmed: confirmed, notes, chainIssues: [] };
}

/**
 * Runs `execute(i)` for i in [0, n) as a closed loop of `concurrency` clients, each timed from start
 * to result; failures are counted by message into `notes`.
 */
async function timedLoop(n: number, concurrency: number, execute: (i: number) => Promise<unknown>) {
  const latencies: number[] = new Array(n);
  const errors = new Map<string, number>();
  let completed = 0;
  const wallMs = await runClosedLoop(n, concurrency, async (i) => {
    const t = performance.now();
    try {
      await execute(i);
      completed++;
    } catch (err) {
      countErrors(errors, err);
    }
    latencies[i] = performance.now() - t;
  });
  const notes = [...errors].map(([msg, count]) => `${count} × ${msg}`);
  return { wallMs, latencies, completed, notes };
}

/**
 * The Temporal round trip alone: `bareWorkflow` (no activity) started on the floor worker's task
 * queue and its result awaited, n times; `confirmed` counts the executions that completed.
 */
export async function benchBareWorkflow(temporal: Client, taskQueue: string, n: number, concurrency: number): Promise<PhaseResult> {
  const run = randomBytes(4).toString('hex');
  const { wallMs, latencies, completed, notes } = await timedLoop(n, concurrency, (i) =>
    temporal.workflow.execute('bareWorkflow', { taskQueue, workflowId: `bare:${run}:${i}`, workflowExecutionTimeout: '2m' }),
  );
  return { mode: 'workflow', concurrency, n, wallMs, latencies, confirmed: completed, finalConfirmed: completed, notes, chainIssues: [] };
}

/**
 * The orchestration floor: per payment, start `orchestrationFloorWorkflow` on the floor worker's
 * task queue and wait for its result (the transaction hash). Timed from start to result.
 */
export async function benchOrchestrationFloor(
  c: FloorChain,
  temporal: Client,
  taskQueue: string,
  n: number,
  concurrency: number,
): Promise<PhaseResult> {
  const { seller, calls } = await signCalls(c, n);
  const fromBlock = await c.chain.getBlockNumber();
  const { wallMs, latencies, notes } = await timedLoop(n, concurrency, (i) => {
    const id = `floor:${calls[i].from.toLowerCase()}:${calls[i].nonce}`;
    return temporal.workflow.execute('orchestrationFloorWorkflow', {
      taskQueue,
      workflowId: id,
      args: [{ network: c.network, id, to: c.usdc, data: calls[i].data }],
      workflowExecutionTimeout: '2m',
    });
  });
  const confirmed = await countOnChain(c, fromBlock, seller, calls, notes);
  return { mode: 'orchestration', concurrency, n, wallMs, latencies, confirmed, finalConfirmed: confirmed, notes, chainIssues: [] };
}
