import type { ServiceDeps } from '../deps';
import { mainnetAllowed } from '../chains/mainnet-gate';
import { solanaSupportedKinds } from '../schemes/solana/supported';
import { caip2Of } from './v2';
import { EIP2612_GAS_SPONSORING } from '../schemes/permit2/sdk-payload';
import type { SupportedKind } from '../schemes/scheme';

/**
 * v1 kinds from the network table: on every enabled EVM network (mainnets only with
 * MAINNETS_ENABLED) `exact` (EIP-3009, or Permit2 on Permit2-only networks) and `upto` (Permit2).
 * Networks listed for POST /v1/permit only are not.
 */
export function supportedKinds(deps: Pick<ServiceDeps, 'networks' | 'config'>): SupportedKind[] {
  const kinds: SupportedKind[] = [];
  for (const n of deps.networks.values()) {
    if (!n.enabled || n.permitOnly || !mainnetAllowed(deps.config, n)) continue;
    kinds.push({ x402Version: 1, scheme: 'exact', network: n.id });
    kinds.push({ x402Version: 1, scheme: 'upto', network: n.id });
  }
  return kinds;
}

/**
 * GET /v1/supported: every v1 kind (EVM, then Solana) and the same kinds again as v2 kinds with
 * CAIP-2 networks, plus v2's `extensions` and `signers` (the addresses that send our transactions,
 * by CAIP-2 family), so both SDK generations can pick us as their facilitator.
 */
export function supportedResponse(deps: Pick<ServiceDeps, 'networks' | 'config'>) {
  const v1 = [...supportedKinds(deps), ...solanaSupportedKinds(deps.config)];
  const v2 = v1.map((k) => ({ ...k, x402Version: 2 as const, network: caip2Of(deps, k.network), ...v2Extra(deps, k) }));
  const feePayers = [...new Set(v1.flatMap((k) => (k.extra?.feePayer ? [k.extra.feePayer] : [])))];
  return {
    kinds: [...v1, ...v2],
    // The SDK's EIP-2612 permit for Permit2 rides in as our `permit2612` (src/schemes/permit2/sdk-payload.ts).
    extensions: [EIP2612_GAS_SPONSORING],
    signers: { 'eip155:*': [deps.config.RELAYER_ADDRESS], ...(feePayers.length ? { 'solana:*': feePayers } : {}) },
  };
}

/**
 * v2 `upto` buyers sign `witness.facilitator` = the requirements' `extra.facilitatorAddress`, which
 * the seller's SDK takes from this kind: the facilitator contract, the only caller the upto proxy
 * accepts for our payments.
 */
function v2Extra(deps: Pick<ServiceDeps, 'networks'>, k: SupportedKind): Pick<SupportedKind, 'extra'> {
  if (k.scheme !== 'upto') return {};
  const facilitator = deps.networks.get(k.network as never)?.facilitator;
  return facilitator ? { extra: { ...k.extra, facilitatorAddress: facilitator } } : {};
}
