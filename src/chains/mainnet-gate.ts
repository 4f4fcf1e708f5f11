import type { Config } from '../config';
import { isEvmNetworkId, isSolanaNetworkId, type NetworkTable } from './networks';
import { solanaNetworks } from './solana/context';

/**
 * The mainnet switch (`MAINNETS_ENABLED`), one rule for every product of the seller API (settle,
 * verify, supported, permit, withdrawals, chat, media) in the API and again in the worker, so a
 * workflow started by hand cannot move mainnet money either. The top-up gateway is a mainnet product
 * by spec (its destination is Base) and is governed by its own configuration (docs/decisions.md).
 */
export const mainnetAllowed = (config: Pick<Config, 'MAINNETS_ENABLED'>, network: { testnet: boolean }) =>
  network.testnet || config.MAINNETS_ENABLED;

/** By network id, EVM or Solana; an id we do not know is not allowed. */
export function networkAllowed(
  deps: { config: Pick<Config, 'MAINNETS_ENABLED' | 'env' | 'SOLANA_FEE_PAYER_KEY'>; networks: NetworkTable },
  id: string,
): boolean {
  const network = isEvmNetworkId(id)
    ? deps.networks.get(id)
    : isSolanaNetworkId(id)
      ? solanaNetworks(deps.config).get(id)?.network
      : undefined;
  return network !== undefined && mainnetAllowed(deps.config, network);
}
