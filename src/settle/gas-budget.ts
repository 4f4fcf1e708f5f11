import { GAS_CEILINGS } from '../chains/evm/gas-ceilings';
import type { ServiceDeps } from '../deps';
import { ApiError } from '../errors';

/**
 * The most gas one workflow of each route makes the relayer sign: what a start charges to the
 * organization's gas budget (GAS_BUDGET_PER_ORG). Routes whose gas the relayer does not pay (Solana,
 * batched) are not charged.
 */
export const ROUTE_GAS: Readonly<Record<string, bigint>> = {
  eip3009: GAS_CEILINGS.settleSplit,
  permit2: GAS_CEILINGS.settlePermit2Exact,
  permit: GAS_CEILINGS.transferWithPermit,
  // The burn on the source chain and the mint with its payout on the destination, both ours to pay.
  'eip3009-crosschain': GAS_CEILINGS.settleAndBurn + GAS_CEILINGS.receiveAndPayout,
};

/**
 * Runs a workflow start under the organization's gas budget: charged the route's gas before the
 * start, given back when the request only attached to a running workflow (or the start failed), so a
 * payment is charged once however often its seller repeats it. A spent budget answers 429 with
 * `Retry-After`, counted in x402_gas_budget_exhausted_total and logged with the organization.
 */
export async function underGasBudget<T>(
  deps: Pick<ServiceDeps, 'rateLimits' | 'metrics' | 'logger'>,
  organizationId: string,
  route: string,
  start: (onStart: (result: 'started' | 'attached') => void) => Promise<T>,
): Promise<T> {
  const gas = ROUTE_GAS[route] ?? 0n;
  const budget = deps.rateLimits;
  if (!budget || gas === 0n) return start(() => undefined);
  try {
    await budget.chargeGas(organizationId, gas);
  } catch (err) {
    if (err instanceof ApiError && err.status === 429) {
      deps.metrics?.gasBudgetExhausted(route);
      deps.logger.warn({ organizationId, route }, 'organization gas budget spent');
    }
    throw err;
  }
  let started = false;
  try {
    return await start((result) => (started = result === 'started'));
  } finally {
    if (!started) await budget.refundGas(organizationId, gas);
  }
}
