/**
 * The devnet Solana node: a JSON-RPC server backed by litesvm (an in-process Solana runtime with the
 * SPL programs). It implements the subset of the real Solana JSON-RPC that @solana/web3.js
 * `Connection` (and the x402 client) calls, so the service's production code (src/chains/solana/rpc.ts)
 * runs against it unchanged through a configured URL (`SOLANA_RPC_URL_SOLANA_DEVNET`).
 *
 * It behaves like a real cluster where it matters (devnet/solana-ledger.ts).
 *
 * Devnet-only methods (`devnet_*`) let tests and `npm start` set up state and inject faults:
 *   devnet_fundToken [owner, amount]  create/top up owner's USDC ATA (and give the owner SOL)
 *   devnet_hold [true|false]          accept transactions but hold them unprocessed; false releases them
 *   devnet_expireBlockhashes []       advance past the blockhash window (held transactions then drop)
 *   devnet_dropHeld []                forget held transactions (as a node that lost them would)
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PublicKey } from '@solana/web3.js';
import { ACCOUNT_SIZE, AccountLayout } from '@solana/spl-token';
import { base58Decode, base58Encode } from '../src/chains/solana/base58';
import { RpcError, SOL, SolanaDevnetLedger } from './solana-ledger';

export { BLOCKHASH_WINDOW, SolanaDevnetLedger } from './solana-ledger';

const ctx = (ledger: SolanaDevnetLedger) => ({ slot: ledger.slot });

function accountJson(ledger: SolanaDevnetLedger, address: string) {
  const a = ledger.svm.getAccount(new PublicKey(address));
  if (!a) return null;
  return {
    data: [Buffer.from(a.data).toString('base64'), 'base64'],
    executable: a.executable,
    lamports: Number(a.lamports),
    owner: a.owner.toBase58(),
    rentEpoch: 0,
    space: a.data.length,
  };
}

/** One JSON-RPC method call. */
function call(ledger: SolanaDevnetLedger, method: string, params: unknown[]): unknown {
  const p = params as any[];
  switch (method) {
    case 'getHealth':
      return 'ok';
    case 'getVersion':
      return { 'solana-core': '2.1.0-litesvm', 'feature-set': 0 };
    case 'getGenesisHash':
      return 'EtWTRABZaYq6iMfeYKouRu166VU2xqa1';
    case 'getSlot':
    case 'getBlockHeight':
      return ledger.slot;
    case 'getLatestBlockhash':
      return { context: ctx(ledger), value: ledger.latestBlockhash() };
    case 'isBlockhashValid':
      return { context: ctx(ledger), value: ledger.isBlockhashValid(String(p[0])) };
    case 'getMinimumBalanceForRentExemption':
      return Number(ledger.svm.minimumBalanceForRentExemption(BigInt(p[0] ?? 0)));
    case 'getBalance':
      return { context: ctx(ledger), value: Number(ledger.svm.getBalance(new PublicKey(p[0])) ?? 0n) };
    case 'getAccountInfo':
      return { context: ctx(ledger), value: accountJson(ledger, p[0]) };
    case 'getMultipleAccounts':
      return { context: ctx(ledger), value: (p[0] as string[]).map((a) => accountJson(ledger, a)) };
    case 'getTokenAccountBalance': {
      const a = ledger.svm.getAccount(new PublicKey(p[0]));
      if (!a || a.data.length < ACCOUNT_SIZE) throw new RpcError(-32602, 'Invalid param: could not find account');
      const amount = AccountLayout.decode(Buffer.from(a.data).subarray(0, ACCOUNT_SIZE)).amount;
      return {
        context: ctx(ledger),
        value: {
          amount: amount.toString(),
          decimals: 6,
          uiAmount: Number(amount) / 1e6,
          uiAmountString: (Number(amount) / 1e6).toString(),
        },
      };
    }
    case 'requestAirdrop': {
      ledger.airdrop(new PublicKey(p[0]), BigInt(p[1]));
      return base58Encode(new Uint8Array(64).map(() => Math.floor(Math.random() * 256)));
    }
    case 'sendTransaction':
      return ledger.send(decodeWire(p[0], p[1]?.encoding));
    case 'simulateTransaction':
      return { context: ctx(ledger), value: { ...ledger.simulate(decodeWire(p[0], p[1]?.encoding)), accounts: null, returnData: null } };
    case 'getSignatureStatuses':
      return {
        context: ctx(ledger),
        value: (p[0] as string[]).map((s) => {
          const st = ledger.status(s);
          return (
            st && {
              slot: st.slot,
              confirmations: null,
              err: st.err,
              status: st.err ? { Err: st.err } : { Ok: null },
              confirmationStatus: 'finalized',
            }
          );
        }),
      };
    case 'devnet_fundToken': {
      const owner = new PublicKey(p[0]);
      if (!ledger.svm.getBalance(owner)) ledger.airdrop(owner, SOL);
      return ledger.fundToken(owner, BigInt(p[1])).toBase58();
    }
    case 'devnet_hold':
      ledger.hold(Boolean(p[0]));
      return true;
    case 'devnet_dropHeld':
      ledger.dropHeld();
      return true;
    case 'devnet_expireBlockhashes':
      ledger.expireBlockhashes();
      return true;
    default:
      throw new RpcError(-32601, `Method not found: ${method}`);
  }
}

const decodeWire = (data: string, encoding: string | undefined) =>
  encoding === 'base64' ? Buffer.from(data, 'base64') : Buffer.from(base58Decode(data));

export interface SolanaDevnet {
  url: string;
  port: number;
  ledger: SolanaDevnetLedger;
  stop(): Promise<void>;
}

/**
 * Starts the devnet node on host:port (0 = a free port): the USDC mint at `usdcMint` (6 decimals),
 * `feePayers` funded with SOL.
 */
export async function startSolanaDevnet(opts: {
  usdcMint: string;
  feePayers: PublicKey[];
  port?: number;
  host?: string;
}): Promise<SolanaDevnet> {
  const ledger = new SolanaDevnetLedger(new PublicKey(opts.usdcMint));
  for (const f of opts.feePayers) ledger.airdrop(f, 1000n * SOL);
  const server = http.createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = (body: unknown) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      let parsed: any;
      try {
        parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        answer({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
        return;
      }
      const one = (r: any) => {
        try {
          return { jsonrpc: '2.0', id: r.id ?? null, result: call(ledger, r.method, Array.isArray(r.params) ? r.params : []) };
        } catch (err) {
          const code = err instanceof RpcError ? err.code : -32603;
          return { jsonrpc: '2.0', id: r.id ?? null, error: { code, message: (err as Error).message } };
        }
      };
      answer(Array.isArray(parsed) ? parsed.map(one) : one(parsed));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', resolve);
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${opts.host ?? '127.0.0.1'}:${port}`,
    port,
    ledger,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
