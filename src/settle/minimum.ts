import { keyModeAllows, type AuthContext } from '../auth/key-mode';
import { mainnetAllowed, networkById } from '../chains/mainnet-gate';
import type { ServiceDeps } from '../deps';

/**
 * Batched nanopayments are settled by the upstream gateway in batches, so no payment costs us gas on
 * its own: the spec's minimum (1 base unit, "Minimum batched payment") applies instead.
 */
export const BATCHED_MIN_AMOUNT = 1n;

/**
 * The minimum settle amount (gas griefing, spec reason `amount_too_low`), for every route at once: the
 * requirements' amount below the network's `minSettleAmount` is refused before any row or workflow.
 * Bodies whose network or amount do not parse, and networks this caller may not use here (not
 * enabled, mainnet switch, key mode), are left to the route, whose refusal comes first in the spec.
 */
export function belowMinimum(deps: Pick<ServiceDeps, 'networks' | 'config'>, auth: AuthContext, body: unknown, route: string): boolean {
  const b = (body ?? {}) as { paymentPayload?: { network?: unknown }; paymentRequirements?: { maxAmountRequired?: unknown } };
  const id = b.paymentPayload?.network;
  const amount = b.paymentRequirements?.maxAmountRequired;
  if (typeof id !== 'string' || typeof amount !== 'string' || !/^\d{1,78}$/.test(amount)) return false;
  const network = networkById(deps, id);
  if (!network?.enabled || !mainnetAllowed(deps.config, network) || !keyModeAllows(auth, network)) return false;
  return BigInt(amount) < (route === 'batched' ? BATCHED_MIN_AMOUNT : network.minSettleAmount);
}
