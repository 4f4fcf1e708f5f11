import type { EvmNetworkId } from '../src/chains/networks';
import type { Relayer } from '../src/chains/evm/relayer';

/**
 * The worker's signer for a wallet of a given role (revenue wallet, top-up relayer, depositor),
 * or undefined when this worker does not hold that wallet's key (docs/security.md "Roles and keys").
 */
export interface RoleSigners {
  signerFor(network: EvmNetworkId, address: string): Relayer | undefined;
}
