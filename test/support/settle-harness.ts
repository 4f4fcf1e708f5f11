import { randomBytes } from 'node:crypto';
import { createPublicClient, http, parseEventLogs, type Address, type Hex, type LocalAccount, type PublicClient } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { Client } from '@temporalio/client';
import { waitUntil, type ManagedProcess } from '../../devnet/process';
import type { Logger } from '../../src/logger';
import { TEST_ACCOUNTS } from './accounts';
import { openTestDatabase, type DbKind, type TestDatabase } from './db';
import { request, signIn, startApi, type JsonResponse, type RunningApi } from './http';
import { exactPayment, type ExactPaymentOptions } from './payments';
import { connectTestTemporal, dbEnv, stackEnv, startWorker } from './services';
import { readStackInfo, type StackInfo } from './stack-info';
import { facilitatorAbi, tokenAbi } from '../../src/chains/evm/abi';

/**
 * One test file's slice of the real stack for settlement tests: a database of the given kind, the
 * API in-process over real HTTP, a real worker process on its own task queue, a signed-in
 * organization with a payout wallet and a test API key, and chain helpers.
 */
export interface SettleHarness {
  stack: StackInfo;
  tdb: TestDatabase;
  api: RunningApi;
  temporal: Client;
  worker: ManagedProcess;
  env: Record<string, string>;
  apiKey: string;
  cookie: string;
  chain: PublicClient;
  payout: Address;
  feeRecipient: Address;
  settle(body: unknown, headers?: Record<string, string>): Promise<JsonResponse>;
  /** Repeats the request until it is pending with a recorded transaction (the chain is paused). */
  settleUntilBroadcast(body: unknown): Promise<JsonResponse>;
  /** Repeats the request until it is final (not 202 pending), as a seller would. */
  settleUntilFinal(body: unknown, timeoutMs?: number): Promise<JsonResponse>;
  /** A base-sepolia payment from `buyer` to this stack's facilitator, signed as a buyer would. */
  pay(buyer: LocalAccount, o?: Partial<ExactPaymentOptions>): ReturnType<typeof exactPayment>;
  /**
   * Stops (or SIGKILLs) the worker, runs `whileDown` with no worker alive, then starts a new one, with
   * `env` over the harness environment when given (that worker only).
   */
  restartWorker(opts?: { kill?: boolean; whileDown?: () => Promise<void>; env?: Record<string, string> }): Promise<void>;
  balanceOf(who: Address): Promise<bigint>;
  /** Settled events of the facilitator for this payer and nonce, over the whole chain. */
  settledEvents(from: Address, nonce: Hex): Promise<number>;
  close(): Promise<void>;
}

export async function startSettleHarness(
  kind: DbKind,
  opts: {
    relayerIndex: number;
    env?: Record<string, string>;
    platformFeeBps?: number;
    /** The API's logger (default: silent unless LOG_LEVEL is set). */
    logger?: Logger;
    /** Sees every line the worker process prints. */
    onWorkerLine?: (line: string) => void;
    /** The wallet that signs in and owns the organization (default: a fresh one). */
    owner?: PrivateKeyAccount;
    /** The API's Temporal client (default: one to the stack with the env's payload codec); the harness closes it. */
    temporal?: Client;
  },
): Promise<SettleHarness> {
  const stack = readStackInfo();
  const feeRecipient = TEST_ACCOUNTS.feeRecipient.address;
  // A fresh payout wallet per harness, so balance deltas are exact.
  const payout = privateKeyToAccount(generatePrivateKey()).address;
  const env = {
    ...stackEnv({
      taskQueue: `settle-${kind}-${randomBytes(4).toString('hex')}`,
      relayerKey: TEST_ACCOUNTS.relayerKeys[opts.relayerIndex],
    }),
    PLATFORM_FEE_RECIPIENT: feeRecipient,
    ...opts.env,
  };
  const tdb = await openTestDatabase(kind, env);
  const temporal = opts.temporal ?? (await connectTestTemporal(env));
  const api = await startApi({ db: tdb.db, config: tdb.config, temporal, logger: opts.logger });
  const workerEnv = { ...env, ...dbEnv(tdb.config) };
  const workerOpts = { onLine: opts.onWorkerLine };
  let worker = await startWorker(workerEnv, workerOpts);

  const owner = opts.owner ?? privateKeyToAccount(generatePrivateKey());
  const cookie = await signIn(api.baseUrl, owner);
  const patched = await request('PATCH', `${api.baseUrl}/v1/organization`, {
    cookie,
    json: { payoutWalletTest: payout, platformFeeBps: opts.platformFeeBps ?? 0 },
  });
  if (patched.status !== 200) throw new Error(`PATCH /v1/organization: ${patched.status} ${JSON.stringify(patched.body)}`);
  const key = await request('POST', `${api.baseUrl}/v1/api_keys`, { cookie, json: { name: 'seller backend', test_net: true } });
  if (key.status !== 201) throw new Error(`POST /v1/api_keys: ${key.status} ${JSON.stringify(key.body)}`);

  const chain = createPublicClient({ transport: http(stack.chains['base-sepolia'].rpcUrl) });
  const h: SettleHarness = {
    stack,
    tdb,
    api,
    temporal,
    get worker() {
      return worker;
    },
    env: workerEnv,
    apiKey: key.body.api_key,
    cookie,
    chain,
    payout,
    feeRecipient,
    settle: (body, headers = {}) =>
      request('POST', `${api.baseUrl}/v1/settle`, { json: body, headers: { authorization: `Bearer ${h.apiKey}`, ...headers } }),
    settleUntilBroadcast: (body) =>
      waitUntil(
        'a pending answer with the transaction hash',
        async () => {
          const res = await h.settle(body);
          return res.status === 202 && res.body.transaction ? res : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 200 },
      ),
    settleUntilFinal: (body, timeoutMs = 60_000) =>
      waitUntil(
        'the settlement to be final',
        async () => {
          const res = await h.settle(body);
          return res.status === 202 ? undefined : res;
        },
        { timeoutMs, intervalMs: 500 },
      ),
    pay: (buyer, o = {}) =>
      exactPayment({
        buyer,
        network: 'base-sepolia',
        chainId: stack.chains['base-sepolia'].chainId,
        usdc: stack.usdc,
        facilitator: stack.facilitator,
        ...o,
      }),
    async restartWorker({ kill = false, whileDown, env: overrides } = {}) {
      if (kill) {
        worker.child.kill('SIGKILL');
        await worker.exited;
      } else await worker.stop();
      await whileDown?.();
      worker = await startWorker({ ...workerEnv, ...overrides }, workerOpts);
    },
    balanceOf: (who) => chain.readContract({ address: stack.usdc, abi: tokenAbi, functionName: 'balanceOf', args: [who] }),
    async settledEvents(from, nonce) {
      const logs = await chain.getLogs({ address: stack.facilitator, fromBlock: 0n, toBlock: 'latest' });
      return parseEventLogs({ abi: facilitatorAbi, logs, eventName: 'Settled' }).filter(
        (l) => l.args.from.toLowerCase() === from.toLowerCase() && l.args.nonce === nonce,
      ).length;
    },
    async close() {
      await worker.stop();
      await api.close();
      await temporal.connection.close();
      await tdb.close();
    },
  };
  return h;
}
