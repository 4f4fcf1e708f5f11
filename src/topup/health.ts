import type { Address } from 'viem';
import { publicClientFor } from '../chains/evm/clients';
import { databaseCheck, healthStatus, networkChecks, temporalCheck, timed } from '../observability/health';
import type { TopupDeps } from './context';
import { TOPUP_DESTINATION_NETWORK } from './types';
import { depositorAbi, merchantAbi } from '../chains/evm/abi';

/**
 * GET /healthz: each dependency is asked, bounded, for real: Temporal (system info), the database
 * (a query), every enabled network's RPC with the relayer's gas (src/observability/health.ts) and
 * the merchant contract on the destination chain (code present, the deposit key allowed on it and
 * our relayer allowed on the deposit key).
 * 200 when all answer, 503 otherwise; the body names the failing one.
 */
export async function health(deps: TopupDeps) {
  const destination = deps.networks.get(TOPUP_DESTINATION_NETWORK);
  const [temporal, database, networks, merchantContract] = await Promise.all([
    temporalCheck(deps.temporal),
    databaseCheck(deps.db),
    networkChecks({ ...deps, onRpcError: (network) => deps.metrics?.rpcError(network) }),
    timed(async () => {
      if (!destination?.enabled) throw new Error('network base is not configured (RPC URL, facilitator, USDC)');
      const code = await publicClientFor(destination).getCode({ address: deps.topup.TOPUP_MERCHANT_CONTRACT as Address });
      if (!code || code === '0x') throw new Error(`no contract at ${deps.topup.TOPUP_MERCHANT_CONTRACT}`);
      const relayer = deps.topup.TOPUP_RELAYER_ADDRESS as Address;
      const depositor = deps.config.TOPUP_DEPOSITOR_CONTRACT as Address;
      const client = publicClientFor(destination);
      const [depositorAllowed, relayerAllowed] = await Promise.all([
        client.readContract({
          address: deps.topup.TOPUP_MERCHANT_CONTRACT as Address,
          abi: merchantAbi,
          functionName: 'isRelayer',
          args: [depositor],
        }),
        client.readContract({ address: depositor, abi: depositorAbi, functionName: 'isCaller', args: [relayer] }),
      ]);
      if (!depositorAllowed) throw new Error(`the deposit key ${depositor} may not deposit on the merchant contract`);
      if (!relayerAllowed) throw new Error(`relayer ${relayer} may not call the deposit key ${depositor}`);
      return { address: deps.topup.TOPUP_MERCHANT_CONTRACT, relayer, depositor };
    }),
  ]);
  // The destination chain is required even when its table entry is incomplete (no RPC URL).
  if (!networks[TOPUP_DESTINATION_NETWORK]) {
    networks[TOPUP_DESTINATION_NETWORK] = { ok: false, ms: 0, error: 'network base is not configured (RPC URL, facilitator, USDC)' };
  }
  const { status, state } = healthStatus([temporal, database, merchantContract], networks);
  return {
    status,
    body: { status: state, merchant: deps.topup.TOPUP_MERCHANT_ID, checks: { temporal, database, networks, merchantContract } },
  };
}
