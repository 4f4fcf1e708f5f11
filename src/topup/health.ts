import type { Address } from 'viem';
import { publicClientFor } from '../chains/evm/clients';
import type { TopupDeps } from './context';
import { TOPUP_DESTINATION_NETWORK } from './types';
import { merchantAbi } from './merchant-abi';

type Check = { ok: boolean; ms: number; error?: string; [k: string]: unknown };

async function timed(fn: () => Promise<Record<string, unknown> | void>, timeoutMs: number): Promise<Check> {
  const started = performance.now();
  try {
    const extra = await Promise.race([
      fn(),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs).unref()),
    ]);
    return { ok: true, ms: Math.round(performance.now() - started), ...(extra ?? {}) };
  } catch (err) {
    return { ok: false, ms: Math.round(performance.now() - started), error: (err as Error).message.split('\n')[0] };
  }
}

/**
 * GET /healthz: each dependency is asked, bounded, for real: Temporal (system info), the database
 * (a query), the destination chain's RPC (block number) and the merchant contract (code present).
 * 200 when all answer, 503 otherwise; the body names the failing one.
 */
export async function health(deps: TopupDeps, timeoutMs = 2_000) {
  const destination = deps.networks.get(TOPUP_DESTINATION_NETWORK);
  const [temporal, database, rpc, merchantContract] = await Promise.all([
    timed(async () => {
      await deps.temporal.workflowService.getSystemInfo({});
    }, timeoutMs),
    timed(async () => {
      await deps.db.em.fork().getConnection().execute('select 1');
    }, timeoutMs),
    timed(async () => {
      if (!destination?.enabled) throw new Error('network base is not configured (RPC URL, facilitator, USDC)');
      const block = await publicClientFor(destination).getBlockNumber({ cacheTime: 0 });
      return { network: destination.id, chainId: destination.chainId, blockNumber: Number(block) };
    }, timeoutMs),
    timed(async () => {
      if (!destination?.enabled) throw new Error('network base is not configured');
      const code = await publicClientFor(destination).getCode({ address: deps.topup.TOPUP_MERCHANT_CONTRACT as Address });
      if (!code || code === '0x') throw new Error(`no contract at ${deps.topup.TOPUP_MERCHANT_CONTRACT}`);
      const relayer = deps.topup.TOPUP_RELAYER_ADDRESS as Address;
      const allowed = await publicClientFor(destination).readContract({
        address: deps.topup.TOPUP_MERCHANT_CONTRACT as Address,
        abi: merchantAbi,
        functionName: 'isRelayer',
        args: [relayer],
      });
      if (!allowed) throw new Error(`relayer ${relayer} may not deposit on the merchant contract`);
      return { address: deps.topup.TOPUP_MERCHANT_CONTRACT, relayer };
    }, timeoutMs),
  ]);
  const checks = { temporal, database, rpc, merchantContract };
  const ok = Object.values(checks).every((c) => c.ok);
  return { status: ok ? 200 : 503, body: { status: ok ? 'ok' : 'degraded', merchant: deps.topup.TOPUP_MERCHANT_ID, checks } };
}
