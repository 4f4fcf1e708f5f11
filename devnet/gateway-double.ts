/**
 * Devnet double of the upstream batching gateway (Circle Gateway nanopayments), a third-party
 * service. It speaks that service's HTTP API as its public documentation describes it:
 *
 *   GET  /v1/x402/supported        {kinds: [{x402Version, scheme, network (CAIP-2), extra: {verifyingContract, assets}}]}
 *   POST /v1/x402/verify           {paymentPayload, paymentRequirements} -> {isValid, invalidReason?, payer}
 *   POST /v1/x402/settle           {paymentPayload, paymentRequirements} -> {success, errorReason?, transaction, network, payer}
 *   GET  /v1/x402/transfers/:id    {id, status: received | completed | failed, network, from, to, value, transaction?}
 *   GET  /v1/x402/transfers?from=&nonce=   {transfers: [...]}
 *
 * Devnet control (not part of the upstream API): POST /_devnet/settle-delay {ms} holds every settle
 * answer that long after the payment was accepted (tests crash our worker in that window).
 *
 * It keeps real state: balances are read from our GatewayWallet contract on the devnet chain, an
 * accepted payment locks the payer's balance, and accepted payments are applied on-chain in batches
 * (every `batchIntervalMs`, or at once when `batchSize` are waiting) by the operator key calling
 * `settleBatch`. Verify checks scheme, network, token, signature, time window and amounts; balance
 * and nonce are checked at settle time (as upstream documents). A repeat of an accepted
 * authorization answers the same transfer (idempotent); the transfer id is the `transaction`.
 * State other than the chain lives in memory (a double; a restart forgets unsettled transfers).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  isAddressEqual,
  parseEventLogs,
  recoverTypedDataAddress,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { z } from 'zod';
import { transferWithAuthorizationTypedData } from '../src/schemes/eip3009/typed-data';
import { exactEvmPayloadSchema, paymentRequirementsSchema, type ExactEvmPayload } from '../src/x402/schemas';
import { GATEWAY_BATCHED_DOMAIN, gatewayWalletAbi } from '../src/chains/evm/abi';

export interface GatewayDoubleChain {
  /** Our network name, for logs only: requests must name the chain by its CAIP-2 id, as upstream. */
  network: string;
  chainId: number;
  rpcUrl: string;
  usdc: Address;
}

export interface GatewayDoubleOptions {
  chains: GatewayDoubleChain[];
  gatewayWallet: Address;
  operatorKey: Hex;
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  batchIntervalMs?: number;
  batchSize?: number;
  log?: (line: string) => void;
}

export interface GatewayDouble {
  url: string;
  /** Applies every accepted payment now (tests). */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

interface Transfer {
  id: string;
  chain: GatewayDoubleChain;
  payload: ExactEvmPayload;
  status: 'received' | 'completed' | 'failed';
  transaction?: Hex;
  failure?: string;
}

const REJECT_REASONS: Record<number, string> = {
  1: 'invalid_signature',
  2: 'authorization_not_yet_valid',
  3: 'authorization_expired',
  4: 'nonce_already_used',
  5: 'insufficient_balance',
};
/** An authorization must outlive the next batch by this much to be accepted. */
const MIN_VALIDITY_SECONDS = 30;

const requestSchema = z.object({ paymentPayload: z.unknown(), paymentRequirements: z.unknown() });

type Verdict = { ok: true; chain: GatewayDoubleChain; payload: ExactEvmPayload } | { ok: false; reason: string; payer: string };

export async function startGatewayDouble(opts: GatewayDoubleOptions): Promise<GatewayDouble> {
  const log = opts.log ?? (() => undefined);
  const operator = privateKeyToAccount(opts.operatorKey);
  const caip2 = (c: GatewayDoubleChain) => `eip155:${c.chainId}`;
  const clients = new Map<GatewayDoubleChain, PublicClient>();
  const wallets = new Map<GatewayDoubleChain, ReturnType<typeof createWalletClient>>();
  for (const c of opts.chains) {
    const chain = defineChain({
      id: c.chainId,
      name: c.network,
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [c.rpcUrl] } },
    });
    clients.set(c, createPublicClient({ chain, transport: http(c.rpcUrl, { retryCount: 0 }) }) as PublicClient);
    wallets.set(c, createWalletClient({ chain, transport: http(c.rpcUrl, { retryCount: 0 }), account: operator }));
  }
  // The upstream knows networks by CAIP-2 id only: a v1 name (`base-sepolia`) is a network it does not serve.
  const chainOf = (network: string) => opts.chains.find((c) => caip2(c) === network);

  const transfers = new Map<string, Transfer>();
  /** `${chainId}:${payer}:${nonce}` -> transfer id. */
  const byNonce = new Map<string, string>();
  const queue: Transfer[] = [];
  /** Balance accepted but not yet applied, per `${chainId}:${payer}`. */
  const locked = new Map<string, bigint>();
  const nonceKey = (c: GatewayDoubleChain, p: ExactEvmPayload) =>
    `${c.chainId}:${p.payload.authorization.from.toLowerCase()}:${p.payload.authorization.nonce.toLowerCase()}`;
  const lockKey = (c: GatewayDoubleChain, payer: string) => `${c.chainId}:${payer.toLowerCase()}`;

  /** The checks verify and settle share (everything but balance and nonce). */
  async function check(body: unknown): Promise<Verdict> {
    const req = requestSchema.safeParse(body);
    const payloadResult = exactEvmPayloadSchema.safeParse(req.success ? req.data.paymentPayload : undefined);
    const payer = payloadResult.success ? payloadResult.data.payload.authorization.from : '';
    const fail = (reason: string): Verdict => ({ ok: false, reason, payer });
    if (!payloadResult.success) return fail('invalid_payload');
    const requirements = paymentRequirementsSchema.safeParse(req.success ? req.data.paymentRequirements : undefined);
    if (!requirements.success) return fail('invalid_payment_requirements');
    const payload = payloadResult.data;
    const r = requirements.data;
    const chain = chainOf(payload.network);
    if (!chain || chainOf(r.network) !== chain) return fail('invalid_network');
    if (payload.scheme !== 'exact' || r.scheme !== 'exact') return fail('unsupported_scheme');
    if (r.extra?.name !== GATEWAY_BATCHED_DOMAIN.name || r.extra?.version !== GATEWAY_BATCHED_DOMAIN.version) return fail('invalid_scheme');
    if (r.extra?.verifyingContract && !isAddressEqual(r.extra.verifyingContract as Address, opts.gatewayWallet)) {
      return fail('invalid_verifying_contract');
    }
    if (!isAddressEqual(r.asset as Address, chain.usdc)) return fail('unsupported_asset');
    const a = payload.payload.authorization;
    if (!isAddressEqual(a.to as Address, r.payTo as Address)) return fail('recipient_mismatch');
    if (BigInt(a.value) === 0n || BigInt(a.value) !== BigInt(r.maxAmountRequired)) return fail('invalid_amount');
    const now = BigInt(Math.floor(Date.now() / 1000));
    if (BigInt(a.validAfter) >= now) return fail('authorization_not_yet_valid');
    if (BigInt(a.validBefore) <= now + BigInt(MIN_VALIDITY_SECONDS)) return fail('authorization_expired');
    const typed = transferWithAuthorizationTypedData(
      { ...GATEWAY_BATCHED_DOMAIN, chainId: chain.chainId, verifyingContract: opts.gatewayWallet },
      a,
    );
    const signer = await recoverTypedDataAddress({ ...typed, signature: payload.payload.signature as Hex }).catch(() => undefined);
    if (!signer || !isAddressEqual(signer, a.from as Address)) return fail('invalid_signature');
    return { ok: true, chain, payload };
  }

  async function verify(body: unknown) {
    const v = await check(body);
    return v.ok
      ? { isValid: true, payer: v.payload.payload.authorization.from }
      : { isValid: false, invalidReason: v.reason, payer: v.payer };
  }

  // Accepting is one critical section: the balance read and the lock must not interleave.
  let acceptQueue: Promise<unknown> = Promise.resolve();
  const serialized = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = acceptQueue.then(fn, fn);
    acceptQueue = run.catch(() => undefined);
    return run;
  };

  async function settle(body: unknown) {
    const v = await check(body);
    if (!v.ok) return { success: false, errorReason: v.reason, transaction: '', network: networkOf(body), payer: v.payer };
    const { chain, payload } = v;
    const a = payload.payload.authorization;
    const answer = (t: Transfer) => ({ success: true, transaction: t.id, network: caip2(chain), payer: a.from });
    const refuse = (reason: string) => ({ success: false, errorReason: reason, transaction: '', network: caip2(chain), payer: a.from });
    return serialized(async () => {
      const known = byNonce.get(nonceKey(chain, payload));
      if (known) {
        const t = transfers.get(known)!;
        // The same authorization again is the same transfer; another one with this nonce is a replay.
        return t.payload.payload.signature.toLowerCase() === payload.payload.signature.toLowerCase() && t.status !== 'failed'
          ? answer(t)
          : refuse('nonce_already_used');
      }
      const client = clients.get(chain)!;
      const read = <T>(functionName: string, args: readonly unknown[]) =>
        client.readContract({ address: opts.gatewayWallet, abi: gatewayWalletAbi, functionName, args } as never) as Promise<T>;
      if (await read<boolean>('authorizationState', [a.from, a.nonce])) return refuse('nonce_already_used');
      const available = await read<bigint>('availableBalance', [chain.usdc, a.from]);
      const lockedNow = locked.get(lockKey(chain, a.from)) ?? 0n;
      if (available - lockedNow < BigInt(a.value)) return refuse('insufficient_balance');
      const t: Transfer = { id: randomUUID(), chain, payload, status: 'received' };
      transfers.set(t.id, t);
      byNonce.set(nonceKey(chain, payload), t.id);
      locked.set(lockKey(chain, a.from), lockedNow + BigInt(a.value));
      queue.push(t);
      if (queue.length >= (opts.batchSize ?? 50)) void flush();
      return answer(t);
    });
  }

  function networkOf(body: unknown): string {
    const n = (body as { paymentPayload?: { network?: unknown } } | undefined)?.paymentPayload?.network;
    const chain = typeof n === 'string' ? chainOf(n) : undefined;
    return chain ? caip2(chain) : typeof n === 'string' ? n : '';
  }

  /** Applies the waiting payments, one settleBatch per chain; a failed send is retried next time. */
  let flushing: Promise<void> = Promise.resolve();
  function flush(): Promise<void> {
    flushing = flushing.then(flushOnce, flushOnce);
    return flushing;
  }
  async function flushOnce(): Promise<void> {
    const batch = queue.splice(0, queue.length);
    for (const chain of opts.chains) {
      const mine = batch.filter((t) => t.chain === chain);
      if (mine.length === 0) continue;
      try {
        await applyBatch(chain, mine);
      } catch (err) {
        log(`batch of ${mine.length} on ${chain.network} not applied yet: ${(err as Error).message.split('\n')[0]}`);
        queue.unshift(...mine);
      }
    }
  }

  async function applyBatch(chain: GatewayDoubleChain, batch: Transfer[]): Promise<void> {
    const client = clients.get(chain)!;
    const payments = batch.map((t) => {
      const a = t.payload.payload.authorization;
      return {
        from: a.from as Address,
        to: a.to as Address,
        value: BigInt(a.value),
        validAfter: BigInt(a.validAfter),
        validBefore: BigInt(a.validBefore),
        nonce: a.nonce as Hex,
        signature: t.payload.payload.signature as Hex,
      };
    });
    const hash = await wallets.get(chain)!.writeContract({
      address: opts.gatewayWallet,
      abi: gatewayWalletAbi,
      functionName: 'settleBatch',
      args: [chain.usdc, payments],
      chain: undefined,
      account: operator,
    });
    let receipt;
    for (let delay = 1; !receipt; delay = Math.min(delay * 2, 100)) {
      receipt = await client.getTransactionReceipt({ hash }).catch(() => undefined);
      if (!receipt) await new Promise((r) => setTimeout(r, delay));
    }
    const logs = parseEventLogs({ abi: gatewayWalletAbi, logs: receipt.logs });
    for (const t of batch) {
      const a = t.payload.payload.authorization;
      const mineLog = logs.find(
        (l) =>
          (l.eventName === 'PaymentSettled' || l.eventName === 'PaymentRejected') &&
          isAddressEqual(l.args.from, a.from as Address) &&
          l.args.nonce.toLowerCase() === a.nonce.toLowerCase(),
      );
      t.transaction = hash;
      if (receipt.status === 'success' && mineLog?.eventName === 'PaymentSettled') t.status = 'completed';
      else {
        t.status = 'failed';
        t.failure = mineLog?.eventName === 'PaymentRejected' ? (REJECT_REASONS[mineLog.args.reason] ?? 'rejected') : 'batch_reverted';
      }
      const key = lockKey(chain, a.from);
      locked.set(key, (locked.get(key) ?? 0n) - BigInt(a.value));
    }
    log(`batch of ${batch.length} on ${chain.network} applied in ${hash}`);
  }

  function supported() {
    return {
      kinds: opts.chains.map((c) => ({
        x402Version: 1,
        scheme: 'exact',
        network: caip2(c),
        extra: { verifyingContract: opts.gatewayWallet, assets: [{ address: c.usdc, symbol: 'USDC', decimals: 6 }] },
      })),
    };
  }

  function transfer(id: string) {
    const t = transfers.get(id);
    if (!t) return undefined;
    const a = t.payload.payload.authorization;
    return {
      id: t.id,
      status: t.status,
      network: caip2(t.chain),
      from: a.from,
      to: a.to,
      value: a.value,
      nonce: a.nonce,
      ...(t.transaction ? { transaction: t.transaction } : {}),
      ...(t.failure ? { failureReason: t.failure } : {}),
    };
  }

  let settleDelayMs = 0;
  /** Settle answers being held back: released when the delay is set back to 0. */
  const held: (() => void)[] = [];
  const server: Server = createServer((req, res) => void handle(req, res));
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    try {
      const path = new URL(req.url ?? '/', 'http://double').pathname;
      if (req.method === 'GET' && path === '/v1/x402/supported') return send(200, supported());
      if (req.method === 'GET' && path === '/v1/x402/transfers') {
        const q = new URL(req.url ?? '/', 'http://double').searchParams;
        const from = q.get('from')?.toLowerCase();
        const nonce = q.get('nonce')?.toLowerCase();
        const found = [...transfers.values()].filter((t) => {
          const a = t.payload.payload.authorization;
          return (!from || a.from.toLowerCase() === from) && (!nonce || a.nonce.toLowerCase() === nonce);
        });
        return send(200, { transfers: found.map((t) => transfer(t.id)) });
      }
      if (req.method === 'POST' && path === '/_devnet/settle-delay') {
        settleDelayMs = Number((JSON.parse(await readBody(req)) as { ms?: unknown }).ms) || 0;
        if (settleDelayMs === 0) for (const release of held.splice(0)) release(); // answer what was held
        return send(200, { settleDelayMs });
      }
      if (req.method === 'GET' && path.startsWith('/v1/x402/transfers/')) {
        const t = transfer(decodeURIComponent(path.slice('/v1/x402/transfers/'.length)));
        return t ? send(200, t) : send(404, { error: 'transfer not found' });
      }
      if (req.method === 'POST' && (path === '/v1/x402/verify' || path === '/v1/x402/settle')) {
        let body: unknown;
        try {
          body = JSON.parse(await readBody(req));
        } catch {
          return send(
            400,
            path.endsWith('verify')
              ? { isValid: false, invalidReason: 'invalid_payload', payer: '' }
              : { success: false, errorReason: 'invalid_payload', transaction: '', network: '', payer: '' },
          );
        }
        if (path.endsWith('verify')) return send(200, await verify(body));
        const out = await settle(body);
        if (settleDelayMs > 0) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, settleDelayMs);
            timer.unref();
            held.push(() => (clearTimeout(timer), resolve()));
          });
        }
        return send(out.success ? 200 : 400, out);
      }
      send(404, { error: 'not found' });
    } catch (err) {
      log(`error: ${(err as Error).message}`);
      send(500, { error: 'internal error' });
    }
  }

  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const timer = setInterval(() => {
    if (queue.length > 0) void flush();
  }, opts.batchIntervalMs ?? 2_000);
  timer.unref();
  log(`upstream gateway double on http://127.0.0.1:${port} (${opts.chains.map((c) => c.network).join(', ')})`);
  return {
    url: `http://127.0.0.1:${port}`,
    flush,
    async stop() {
      clearInterval(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > 256 * 1024) reject(new Error('body too large'));
      else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
