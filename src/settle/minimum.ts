import type { ServiceDeps } from '../deps';
import { isEvmNetworkId, isSolanaNetworkId } from '../chains/networks';
import { solanaNetworks } from '../chains/solana/context';

/**
 * The minimum settle amount (gas griefing, spec reason `amount_too_low`), for every route at once: the
 * requirements' amount below the network's `minSettleAmount` is refused before any row or workflow.
 * Bodies whose network or amount do not parse are left to the scheme's own checks.
 */
export function belowMinimum(deps: Pick<ServiceDeps, 'networks' | 'config'>, body: unknown): boolean {
  const b = (body ?? {}) as { paymentPayload?: { network?: unknown }; paymentRequirements?: { maxAmountRequired?: unknown } };
  const network = b.paymentPayload?.network;
  const amount = b.paymentRequirements?.maxAmountRequired;
  if (typeof network !== 'string' || typeof amount !== 'string' || !/^\d{1,78}$/.test(amount)) return false;
  const minimum = isEvmNetworkId(network)
    ? deps.networks.get(network)?.minSettleAmount
    : isSolanaNetworkId(network)
      ? solanaNetworks(deps.config).get(network)?.network.minSettleAmount
      : undefined;
  return minimum !== undefined && BigInt(amount) < minimum;
}
