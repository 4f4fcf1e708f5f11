import type { Config } from '../config';
import { isEvmNetworkId, isSolanaNetworkId, type NetworkTable } from './networks';
import { solanaNetworks } from './solana/context';

/**
 * The mainnet switch (`MAINNETS_ENABLED`), one rule for every product of the seller API (settle,
 * verify, supported, permit, withdrawals, chat, media) in the API and again in the worker, so a
 * workflow started by hand cannot move mainnet money either. The top-up gateway is a mainnet product
 * by spec (its destination is Base) and is governed by its own configuration (docs/decisions/mainnet-switch.md).
 */
export const mainnetAllowed = (config: Pick<Config, 'MAINNETS_ENABLED'>, network: { testnet: boolean }) =>
  network.testnet || config.MAINNETS_ENABLED;

type GateDeps = { config: Pick<Config, 'MAINNETS_ENABLED' | 'env' | 'SOLANA_FEE_PAYER_KEY'>; networks: NetworkTable };

/** A network of ours by id, EVM or Solana (a Solana one only when usable: RPC and fee payer known). */
export function networkById(deps: Pick<GateDeps, 'networks'> & { config: Pick<Config, 'env' | 'SOLANA_FEE_PAYER_KEY'> }, id: string) {
  if (isEvmNetworkId(id)) return deps.networks.get(id);
  return isSolanaNetworkId(id) ? solanaNetworks(deps.config).get(id)?.network : undefined;
}

/** By network id, EVM or Solana; an id we do not know is not allowed. */
export function networkAllowed(deps: GateDeps, id: string): boolean {
  const network = networkById(deps, id);
  return network !== undefined && mainnetAllowed(deps.config, network);
}

/**
 * The worker's view of a settlement: a switched-off mainnet is refused, except a settlement that pays
 * the top-up gateway's relayer wallet (the key this worker holds as `TOPUP_RELAYER_PRIVATE_KEY`),
 * which is a top-up leg.
 */
export function settlementAllowed(deps: GateDeps & { topUpRelayer?: string }, input: { network: string; payout: string }): boolean {
  const topUp = deps.topUpRelayer !== undefined && input.payout.toLowerCase() === deps.topUpRelayer.toLowerCase();
  return topUp || networkAllowed(deps, input.network);
}
