import { Connection as SolanaConnection } from '@solana/web3.js';
import type { Client } from '@temporalio/client';
import { formatEther, parseEther, type Address } from 'viem';
import { publicClientFor } from '../chains/evm/clients';
import { buildSolanaNetworkTable, type NetworkTable } from '../chains/networks';
import type { Config } from '../config';
import type { Database } from '../db/orm';

/** One dependency's answer: `ok`, how long it took, and what it said (or why not). */
export type Check = { ok: boolean; ms: number; error?: string; [k: string]: unknown };

/** Bound on each check of /healthz; a dependency slower than this counts as down. */
export const HEALTH_TIMEOUT_MS = 2_000;

/** `promise`, or a rejection after `timeoutMs` (the underlying call is left to finish on its own). */
export function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs).unref()),
  ]);
}

export async function timed(fn: () => Promise<Record<string, unknown> | void>, timeoutMs = HEALTH_TIMEOUT_MS): Promise<Check> {
  const started = performance.now();
  try {
    const extra = await withTimeout(fn(), timeoutMs);
    return { ok: true, ms: Math.round(performance.now() - started), ...(extra ?? {}) };
  } catch (err) {
    return { ok: false, ms: Math.round(performance.now() - started), error: (err as Error).message.split('\n')[0] };
  }
}

export const temporalCheck = (temporal: Client) =>
  timed(async () => {
    await temporal.workflowService.getSystemInfo({});
  });

export const databaseCheck = (db: Database) =>
  timed(async () => {
    await db.em.fork().getConnection().execute('select 1');
  });

export interface NetworkCheckDeps {
  config: Pick<Config, 'env' | 'RELAYER_ADDRESS' | 'RELAYER_MIN_BALANCE_ETHER'>;
  networks: NetworkTable;
  /** Counts a failed RPC call of `network` (x402_rpc_errors_total on the API). */
  onRpcError?: (network: string) => void;
}

/**
 * Every enabled network's RPC, asked for real and bounded: EVM networks their chain id, block number
 * and the relayer's gas balance (against RELAYER_MIN_BALANCE_ETHER: `relayer.ok` false when below);
 * Solana networks their slot. A network is `ok` when its RPC answers with the configured chain id.
 */
export async function networkChecks(deps: NetworkCheckDeps): Promise<Record<string, Check>> {
  const relayer = deps.config.RELAYER_ADDRESS as Address | undefined;
  const floor = parseEther(deps.config.RELAYER_MIN_BALANCE_ETHER);
  const failed = (network: string) => (check: Check) => {
    if (!check.ok) deps.onRpcError?.(network);
    return [network, check] as const;
  };
  const evm = [...deps.networks.values()]
    .filter((n) => n.enabled)
    .map((n) =>
      timed(async () => {
        const client = publicClientFor(n);
        const [chainId, blockNumber, balance] = await Promise.all([
          client.getChainId(),
          client.getBlockNumber({ cacheTime: 0 }),
          relayer ? client.getBalance({ address: relayer }) : undefined,
        ]);
        if (chainId !== n.chainId) throw new Error(`RPC answers chain id ${chainId}, expected ${n.chainId}`);
        return {
          chainId,
          blockNumber: Number(blockNumber),
          ...(relayer && balance !== undefined
            ? {
                relayer: {
                  address: relayer,
                  balanceEther: formatEther(balance),
                  minBalanceEther: deps.config.RELAYER_MIN_BALANCE_ETHER,
                  ok: balance >= floor,
                },
              }
            : {}),
        };
      }).then(failed(n.id)),
    );
  const solana = [...buildSolanaNetworkTable(deps.config.env).values()]
    .filter((s) => s.enabled && s.rpcUrl)
    .map((s) =>
      timed(async () => ({ slot: await new SolanaConnection(s.rpcUrl!, { disableRetryOnRateLimit: true }).getSlot() })).then(failed(s.id)),
    );
  return Object.fromEntries(await Promise.all([...evm, ...solana]));
}

/**
 * `ok` (200): everything answers; `low_balance` (200): everything answers but a relayer's gas is
 * below the floor (the alert x402RelayerBalanceLow pages; taking the app out of a load balancer would
 * not help); `degraded` (503): something required does not answer.
 */
export function healthStatus(checks: Check[], networks: Record<string, Check>) {
  const down = [...checks, ...Object.values(networks)].some((c) => !c.ok);
  const low = Object.values(networks).some((c) => (c.relayer as { ok?: boolean } | undefined)?.ok === false);
  return down ? { status: 503, state: 'degraded' as const } : { status: 200, state: low ? ('low_balance' as const) : ('ok' as const) };
}

/** GET /healthz of the API: Temporal, the database, and every enabled network (RPC and relayer gas). */
export async function apiHealth(deps: NetworkCheckDeps & { temporal: Client; db: Database }) {
  const [temporal, database, networks] = await Promise.all([temporalCheck(deps.temporal), databaseCheck(deps.db), networkChecks(deps)]);
  const { status, state } = healthStatus([temporal, database], networks);
  return { status, body: { status: state, checks: { temporal, database, networks } } };
}

/** How long one /healthz answer is reused: probes and callers in a burst share one round of checks. */
export const HEALTH_CACHE_MS = 5_000;

export type HealthAnswer = { status: number; body: { status: string } & Record<string, unknown> };

/**
 * `compute`, asked at most once per `ttlMs`: callers within it (and during the round) share one
 * answer, so a flood of /healthz requests costs one round of RPC, Temporal and database checks.
 */
export function cachedHealth(compute: () => Promise<HealthAnswer>, ttlMs = HEALTH_CACHE_MS): () => Promise<HealthAnswer> {
  let last: { at: number; answer: Promise<HealthAnswer> } | undefined;
  return () => {
    const now = Date.now();
    if (!last || now - last.at >= ttlMs) {
      const answer = compute();
      last = { at: now, answer };
      // A round that failed outright is not reused.
      answer.catch(() => {
        if (last?.answer === answer) last = undefined;
      });
    }
    return last.answer;
  };
}

/**
 * What /healthz shows: to everyone the state alone (`ok`, `low_balance`, `degraded`) with its status
 * code; the checks (which dependency, its error, the relayer's address and balance) only to a caller
 * that may read /metrics.
 */
export const healthView = (answer: HealthAnswer, detail: boolean): HealthAnswer =>
  detail ? answer : { status: answer.status, body: { status: answer.body.status } };
