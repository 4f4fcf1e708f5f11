import { Gauge, type Registry } from 'prom-client';
import { formatEther, type Address } from 'viem';
import { publicClientFor } from '../chains/evm/clients';
import type { EvmNetwork, NetworkTable } from '../chains/networks';
import type { Database } from '../db/orm';
import { RelayerTransaction } from '../db/entities';
import type { Logger } from '../logger';
import { withTimeout } from './health';

/** A chain read of these gauges is made at most this often per network (scrapes come every 15-60 s), each bounded. */
export const CHAIN_READ_CACHE_MS = 10_000;
const CHAIN_READ_TIMEOUT_MS = 2_000;

export interface RelayerGaugeSources {
  /** The watched relayer: RELAYER_ADDRESS for the API, TOPUP_RELAYER_ADDRESS for the top-up gateway. */
  relayer?: string;
  db: Database;
  networks: NetworkTable;
  logger?: Logger;
  /** Tests read the chain on every scrape. */
  cacheMs?: number;
}

/**
 * x402_relayer_balance_ether and x402_relayer_nonce of one relayer on each enabled EVM network.
 * Chain reads are cached and bounded; a failed one counts an RPC error and leaves its series out.
 */
export function registerRelayerGauges(registry: Registry, sources: RelayerGaugeSources, rpcError: (network: string) => void): void {
  const relayer = sources.relayer?.toLowerCase() as Address | undefined;
  const cacheMs = sources.cacheMs ?? CHAIN_READ_CACHE_MS;
  const cache = new Map<string, { at: number; value: Promise<unknown> }>();
  const cachedRead = <T>(what: string, network: EvmNetwork, read: () => Promise<T>): Promise<T | undefined> => {
    const key = `${what}|${network.id}`;
    const hit = cache.get(key);
    if (hit && performance.now() - hit.at < cacheMs) return hit.value as Promise<T | undefined>;
    const value = withTimeout(read(), CHAIN_READ_TIMEOUT_MS).catch(() => {
      rpcError(network.id);
      return undefined;
    });
    cache.set(key, { at: performance.now(), value });
    return value;
  };
  const enabled = () => [...sources.networks.values()].filter((n) => n.enabled);

  new Gauge({
    name: 'x402_relayer_balance_ether',
    help: 'Native gas balance of the relayer per enabled EVM network (cached 10 s; absent when the RPC did not answer)',
    labelNames: ['network', 'address'],
    registers: [registry],
    async collect() {
      this.reset();
      if (!relayer) return;
      const networks = enabled();
      const balances = await Promise.all(
        networks.map((n) => cachedRead('balance', n, () => publicClientFor(n).getBalance({ address: relayer }).then(formatEther))),
      );
      networks.forEach((n, i) => {
        if (balances[i] !== undefined) this.set({ network: n.id, address: relayer }, Number(balances[i]));
      });
    },
  });

  // All three are "the next nonce": pending > latest = sent but not mined yet; recorded > pending =
  // signed and recorded but not held by the node (dropped, or never broadcast).
  new Gauge({
    name: 'x402_relayer_nonce',
    help: 'Next nonce of the relayer per enabled EVM network: kind latest (mined), pending (with the node pool), recorded (highest nonce in our write-ahead relayer records + 1; absent before the first); chain reads cached 10 s',
    labelNames: ['network', 'address', 'kind'],
    registers: [registry],
    async collect() {
      this.reset();
      if (!relayer) return;
      const networks = enabled();
      const reads = await Promise.all(
        networks.map((n) =>
          Promise.all([
            cachedRead('nonce', n, () => {
              const client = publicClientFor(n);
              return Promise.all([
                client.getTransactionCount({ address: relayer, blockTag: 'latest' }),
                client.getTransactionCount({ address: relayer, blockTag: 'pending' }),
              ]);
            }),
            recordedNextNonce(sources, n, relayer),
          ]),
        ),
      );
      networks.forEach((n, i) => {
        const [chain, recorded] = reads[i]!;
        const labels = { network: n.id, address: relayer };
        if (chain) {
          this.set({ ...labels, kind: 'latest' }, chain[0]);
          this.set({ ...labels, kind: 'pending' }, chain[1]);
        }
        if (recorded !== undefined) this.set({ ...labels, kind: 'recorded' }, recorded);
      });
    },
  });
}

/** Highest recorded nonce of `signer` on the network's chain + 1, undefined when none (or the database did not answer). */
async function recordedNextNonce(sources: RelayerGaugeSources, network: EvmNetwork, signer: string): Promise<number | undefined> {
  try {
    const [top] = await sources.db.em
      .fork()
      .find(RelayerTransaction, { chainId: network.chainId!, signer }, { orderBy: { nonce: 'desc' }, limit: 1, fields: ['nonce'] });
    return top ? top.nonce + 1 : undefined;
  } catch (err) {
    sources.logger?.warn({ err: String(err), network: network.id }, 'could not read the recorded relayer nonces');
    return undefined;
  }
}
