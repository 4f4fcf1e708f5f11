import type { Config } from '../../config';
import { solanaNetworks } from '../../chains/solana/context';
import type { SupportedKind } from '../scheme';

/** `exact` on every configured Solana network, with our fee payer in `extra.feePayer` (as x402 does). */
export function solanaSupportedKinds(config: Pick<Config, 'env' | 'SOLANA_FEE_PAYER_KEY' | 'MAINNETS_ENABLED'>): SupportedKind[] {
  return [...solanaNetworks(config).values()]
    .filter((c) => c.network.testnet || config.MAINNETS_ENABLED)
    .map((c) => ({ x402Version: 1, scheme: 'exact', network: c.network.id, extra: { feePayer: c.feePayer.publicKey.toBase58() } }));
}
