import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { answerClientErrors } from '../../src/http/client-errors';
import type { AddressInfo } from 'node:net';
import {
  createPublicClient,
  createWalletClient,
  http,
  parseEventLogs,
  type Address,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { Client } from '@temporalio/client';
import { waitUntil, type ManagedProcess } from '../../devnet/process';
import { DEVNET_MERCHANT_ADDRESS, DEVNET_TOPUP_DEPLOYER_KEY } from '../../src/chains/devnet-addresses';
import { buildNetworkTable } from '../../src/chains/networks';
import { createLogger } from '../../src/logger';
import { TopUp } from '../../src/db/entities';
import { createTopupApp, topupErrorBody } from '../../src/topup/app';
import { loadTopupConfig, type TopupConfig } from '../../src/topup/config';
import { TEST_ACCOUNTS } from './accounts';
import { openTestDatabase, type DbKind, type TestDatabase } from './db';
import { waitForReceipt } from './evm';
import { request, type JsonResponse } from './http';
import { exactPayment, type ExactPaymentOptions } from './payments';
import { buyerAuthHeaders } from '../../src/media/buyer-auth-client';
import { connectTestTemporal, dbEnv, stackEnv, startWorker } from './services';
import { readStackInfo, type StackInfo } from './stack-info';
import { merchantAbi, tokenAbi } from '../../src/chains/evm/abi';

/**
 * One test file's slice of the real stack for the top-up gateway: the `base` devnet chain (8453)
 * with the merchant contract, a real worker process whose relayer is the gateway relayer wallet, and
 * the gateway app over real HTTP on its own port.
 */
export interface TopupHarness {
  stack: StackInfo;
  tdb: TestDatabase;
  temporal: Client;
  worker: ManagedProcess;
  topup: TopupConfig;
  url: string;
  merchant: string;
  chain: PublicClient;
  relayer: LocalAccount;
  feeRecipient: Address;
  /** A fresh payer holding `usdc` base units on base (sent from a funded test buyer). */
  freshPayer(usdc?: bigint): Promise<LocalAccount>;
  /** An EIP-3009 payment on base to the facilitator, as an x402 buyer signs it; returns the X-PAYMENT value. */
  xPayment(payer: LocalAccount, o?: Partial<ExactPaymentOptions>): Promise<{ header: string; nonce: Hex; payload: any }>;
  post(body: unknown, xPayment?: string, merchant?: string): Promise<JsonResponse>;
  /**
   * Repeats the top-up request with this X-PAYMENT (every 300 ms, as a buyer's client would) until it is
   * answered `status`; returns that answer and the status of every answer before it, for the caller to assert.
   */
  repeatUntil(xPayment: string, status: number, timeoutMs: number): Promise<{ final: JsonResponse; before: number[] }>;
  /** GET on the gateway; with `as`, signed by that wallet (the buyer-signature headers): a payer reads its whole top-up record. */
  get(path: string, opts?: { as?: LocalAccount }): Promise<JsonResponse>;
  usdcOf(who: Address): Promise<bigint>;
  merchantBalance(buyer: Address): Promise<bigint>;
  setCreditLimit(buyer: Address, limit: bigint): Promise<void>;
  depositedEvents(buyer: Address): Promise<bigint[]>;
  /** Stops (SIGKILL with `kill`) and starts the worker again; `whileDown` runs between the two. */
  restartWorker(opts?: { kill?: boolean; whileDown?: () => Promise<void> }): Promise<void>;
  /** A wallet client on the base devnet chain (the account pays gas). */
  walletOf(account: LocalAccount): ReturnType<typeof createWalletClient>;
  /** Resolves the rows of these top-ups once all exist (in any state). */
  rows(ids: string[]): Promise<TopUp[]>;
  close(): Promise<void>;
}

export const TOPUP_TEST_FEE_FIXED = 10_000n;
export const TOPUP_TEST_FEE_BPS = 30n;

export async function startTopupHarness(kind: DbKind, opts: { relayerIndex: number; env?: Record<string, string> }): Promise<TopupHarness> {
  const stack = readStackInfo();
  const relayer = TEST_ACCOUNTS.relayers[opts.relayerIndex];
  const feeRecipient = TEST_ACCOUNTS.feeRecipient.address;
  const server: Server = createServer();
  answerClientErrors(server, topupErrorBody); // as serveUntilSignal does for the gateway process
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const env: Record<string, string> = {
    ...stackEnv({ taskQueue: `topup-${kind}-${randomBytes(4).toString('hex')}`, relayerKey: TEST_ACCOUNTS.relayerKeys[opts.relayerIndex] }),
    // The devnet `base` chain stands in for Base mainnet (real chain id, our contracts).
    RPC_URLS_BASE: stack.chains.base.rpcUrl,
    FACILITATOR_ADDRESS_MAINNET: stack.facilitator,
    USDC_ADDRESS_BASE: stack.usdc,
    TOPUP_URL: url,
    TOPUP_MERCHANT_ID: 'demo-merchant',
    TOPUP_MERCHANT_CONTRACT: DEVNET_MERCHANT_ADDRESS,
    TOPUP_RELAYER_ADDRESS: relayer.address,
    TOPUP_FEE_FIXED: TOPUP_TEST_FEE_FIXED.toString(),
    TOPUP_FEE_BPS: TOPUP_TEST_FEE_BPS.toString(),
    TOPUP_FEE_RECIPIENT: feeRecipient,
    ...opts.env,
  };
  const tdb = await openTestDatabase(kind, env);
  const temporal = await connectTestTemporal(env);
  const topup = loadTopupConfig(tdb.config.env);
  const app = createTopupApp({
    config: tdb.config,
    topup,
    db: tdb.db,
    networks: buildNetworkTable(tdb.config.env),
    temporal,
    logger: createLogger(process.env.LOG_LEVEL ?? 'silent', 'test-topup'),
  });
  server.on('request', app.callback());
  const workerEnv = { ...env, ...dbEnv(tdb.config) };
  let worker = await startWorker(workerEnv);

  const chain = createPublicClient({ transport: http(stack.chains.base.rpcUrl) }) as PublicClient;
  const chainDef = {
    id: stack.chains.base.chainId,
    name: 'base-devnet',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [stack.chains.base.rpcUrl] } },
  } as const;
  const wallet = (account: LocalAccount) => createWalletClient({ account, chain: chainDef, transport: http(stack.chains.base.rpcUrl) });
  const funder = TEST_ACCOUNTS.buyers[0];
  const owner = privateKeyToAccount(DEVNET_TOPUP_DEPLOYER_KEY);

  const h: TopupHarness = {
    stack,
    tdb,
    temporal,
    get worker() {
      return worker;
    },
    topup,
    url,
    merchant: 'demo-merchant',
    chain,
    relayer,
    feeRecipient,
    async freshPayer(usdc = 100_000_000n) {
      const payer = privateKeyToAccount(generatePrivateKey());
      const hash = await wallet(funder).writeContract({
        address: stack.usdc,
        abi: tokenAbi,
        functionName: 'transfer',
        args: [payer.address, usdc],
      });
      await waitForReceipt(chain, hash);
      return payer;
    },
    async xPayment(payer, o = {}) {
      const body = await exactPayment({
        buyer: payer,
        network: 'base',
        chainId: stack.chains.base.chainId,
        usdc: stack.usdc,
        facilitator: stack.facilitator,
        ...o,
      });
      const header = Buffer.from(JSON.stringify(body.paymentPayload)).toString('base64');
      return { header, nonce: body.paymentPayload.payload.authorization.nonce as Hex, payload: body.paymentPayload };
    },
    post: (body, xPayment, merchant = 'demo-merchant') =>
      request('POST', `${url}/v1/${merchant}/topups`, { json: body, headers: xPayment ? { 'x-payment': xPayment } : {} }),
    async repeatUntil(xPayment, status, timeoutMs) {
      const before: number[] = [];
      const final = await waitUntil(
        `the top-up to be answered ${status}`,
        async () => {
          const res = await h.post({}, xPayment);
          if (res.status === status) return res;
          before.push(res.status);
          return undefined;
        },
        { timeoutMs, intervalMs: 300 },
      );
      return { final, before };
    },
    get: async (path, o = {}) =>
      request('GET', `${url}${path}`, { headers: o.as ? await buyerAuthHeaders(o.as, { method: 'GET', url: `${url}${path}` }) : {} }),
    usdcOf: (who) => chain.readContract({ address: stack.usdc, abi: tokenAbi, functionName: 'balanceOf', args: [who] }),
    merchantBalance: (buyer) =>
      chain.readContract({ address: DEVNET_MERCHANT_ADDRESS, abi: merchantAbi, functionName: 'balanceOf', args: [buyer] }),
    async setCreditLimit(buyer, limit) {
      const hash = await wallet(owner).writeContract({
        address: DEVNET_MERCHANT_ADDRESS,
        abi: merchantAbi,
        functionName: 'setCreditLimit',
        args: [buyer, limit],
      });
      await waitForReceipt(chain, hash);
    },
    async depositedEvents(buyer) {
      const logs = await chain.getLogs({ address: DEVNET_MERCHANT_ADDRESS, fromBlock: 0n, toBlock: 'latest' });
      return parseEventLogs({ abi: merchantAbi, logs, eventName: 'Deposited' })
        .filter((l) => l.args.buyer.toLowerCase() === buyer.toLowerCase())
        .map((l) => l.args.amount);
    },
    walletOf: (account) => wallet(account) as any,
    rows: (ids) => tdb.db.em.fork().find(TopUp, { id: { $in: ids } }),
    async restartWorker({ kill = false, whileDown } = {}) {
      if (kill) {
        worker.child.kill('SIGKILL');
        await worker.exited;
      } else await worker.stop();
      await whileDown?.();
      worker = await startWorker(workerEnv);
    },
    async close() {
      await worker.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await temporal.connection.close();
      await tdb.close();
    },
  };
  return h;
}
