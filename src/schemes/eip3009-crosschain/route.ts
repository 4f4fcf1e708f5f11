import type { EvmNetwork, NetworkTable } from '../../chains/networks';

export type CrossChainRoute =
  | { kind: 'same-chain' }
  | { kind: 'cross-chain'; destination: EvmNetwork & { cctpDomain: number }; sourceDomain: number }
  | { kind: 'reject'; reason: 'cross_chain_not_supported' | 'unsupported_destination_chain' };

/**
 * The route decision inside the EIP-3009 path (spec routing step 4): `extra.destinationChainId`
 * absent or equal to the source chain id stays on the source chain; otherwise the payment is
 * bridged. Refused (docs/decisions/crosschain-settlement.md):
 *   - `cross_chain_not_supported`: the source or the destination is same-chain only (Avalanche,
 *     Sei, Arc testnet), or the source has no bridge (no CCTP domain or bridge contracts);
 *   - `unsupported_destination_chain`: no enabled network has that chain id, it has no bridge, it is
 *     of the other mode (testnet vs mainnet), or it is a mainnet while mainnets are off.
 */
export function crossChainRouteOf(
  source: EvmNetwork,
  destinationChainId: number | undefined,
  networks: NetworkTable,
  opts: { mainnetsEnabled: boolean },
): CrossChainRoute {
  if (destinationChainId === undefined || destinationChainId === source.chainId) return { kind: 'same-chain' };
  if (source.sameChainOnly) return { kind: 'reject', reason: 'cross_chain_not_supported' };
  // CCTP burns USDC only: a chain whose dollar token is another one (robinhood's USDG) has no bridge.
  if (source.cctpDomain === undefined || !source.bridgeMessenger || source.stablecoin !== 'USDC') {
    return { kind: 'reject', reason: 'cross_chain_not_supported' };
  }
  const destination = [...networks.values()].find((n) => n.chainId === destinationChainId);
  if (!destination) return { kind: 'reject', reason: 'unsupported_destination_chain' };
  // Same-chain-only is a property of the network, said before whether this deployment serves it.
  if (destination.sameChainOnly) return { kind: 'reject', reason: 'cross_chain_not_supported' };
  if (!destination.enabled || destination.permitOnly) return { kind: 'reject', reason: 'unsupported_destination_chain' };
  if (destination.testnet !== source.testnet || (!destination.testnet && !opts.mainnetsEnabled)) {
    return { kind: 'reject', reason: 'unsupported_destination_chain' };
  }
  if (destination.cctpDomain === undefined || !destination.bridgeTransmitter || !destination.usdc || destination.stablecoin !== 'USDC') {
    return { kind: 'reject', reason: 'unsupported_destination_chain' };
  }
  return { kind: 'cross-chain', destination: destination as EvmNetwork & { cctpDomain: number }, sourceDomain: source.cctpDomain };
}
