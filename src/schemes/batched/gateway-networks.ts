import type { EvmNetwork, NetworkTable } from '../../chains/networks';

/**
 * Which networks the batched path serves (spec "Batching gateway network table" and routing step 2).
 * The network table holds CAIP-2 ids, gateway domains and gateway-wallet addresses; this module holds
 * the batched path's own rules.
 */

/** Networks configured locally for the batching gateway: the spec's table plus `tempo`. */
export const GATEWAY_NETWORK_IDS = [
  'arc-testnet',
  'base-sepolia',
  'optimism-sepolia',
  'fluent-testnet',
  'ethereum',
  'base',
  'optimism',
  'arbitrum',
  'avalanche',
  'bsc',
  'polygon',
  'unichain',
  'ink',
  'sonic',
  'worldchain',
  'sei',
  'hyperevm',
  'megaeth',
  'tempo',
] as const;

/** Testnets are always gateway-enabled (settle routing step 2). */
const ALWAYS_ENABLED = new Set(['arc-testnet', 'base-sepolia', 'optimism-sepolia', 'fluent-testnet']);
/** On the verify path `testnet` is true for these only (spec "POST /v1/verify"). */
const VERIFY_TESTNETS = new Set(['arc-testnet', 'base-sepolia', 'optimism-sepolia']);
/** Networks the gateway status record reports, in the spec's order. */
export const STATUS_NETWORK_IDS = [
  'arc-testnet',
  'base-sepolia',
  'optimism-sepolia',
  'fluent-testnet',
  'base',
  'optimism',
  'polygon',
  'unichain',
  'ink',
  'hyperevm',
  'megaeth',
] as const;

const isGatewayNetwork = (id: string) => (GATEWAY_NETWORK_IDS as readonly string[]).includes(id);

/** The network when the batched path may forward it: a gateway network, and a testnet or mainnets on. */
export function gatewayNetwork(networks: NetworkTable, id: string, mainnetEnabled: boolean): EvmNetwork | undefined {
  if (!isGatewayNetwork(id)) return undefined;
  const network = networks.get(id as EvmNetwork['id']);
  if (!network) return undefined;
  if (ALWAYS_ENABLED.has(id)) return network;
  return !network.testnet && mainnetEnabled ? network : undefined;
}

export const isGatewayEnabled = (networks: NetworkTable, id: string, mainnetEnabled: boolean) =>
  gatewayNetwork(networks, id, mainnetEnabled) !== undefined;

/** `testnet` of a batched settle response: the network table's flag. */
export const settleTestnetFlag = (network: EvmNetwork) => network.testnet;
/** `testnet` of a batched verify response (fluent-testnet reports false there, as the spec says). */
export const verifyTestnetFlag = (id: string) => VERIFY_TESTNETS.has(id);

/** `networkStatus` of the gateway status record. */
export function networkStatus(networks: NetworkTable, mainnetEnabled: boolean): Record<string, boolean> {
  return Object.fromEntries(STATUS_NETWORK_IDS.map((id) => [id, isGatewayEnabled(networks, id, mainnetEnabled)]));
}
