import type { EvmNetworkId } from '../src/chains/networks';
import type { Relayer } from '../src/chains/evm/relayer';

/**
 * The wallets the worker signs money movements with, by role (docs/security.md "Roles and keys"):
 * `revenue` (REVENUE_WALLET_PRIVATE_KEY) pays refunds of our own paid services, `topupRelayer`
 * (TOPUP_RELAYER_PRIVATE_KEY) deposits and refunds top-ups, `depositor` (RELAYER_PRIVATE_KEY) is
 * the facilitator's account in the gateway wallet and signs its withdrawals.
 */
export type SignerRole = 'revenue' | 'topupRelayer' | 'depositor';

/**
 * The worker's signer of one role on a network, or undefined when this worker does not hold that
 * role's key. An activity asks for its own role only: no address from workflow input chooses a key.
 */
export interface RoleSigners {
  signerFor(role: SignerRole, network: EvmNetworkId): Relayer | undefined;
}
