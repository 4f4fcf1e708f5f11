import { createPublicClient, defineChain, fallback, type Chain, type PublicClient } from 'viem';
import type { EvmNetwork } from '../networks';
import { tracedHttp } from './rpc-spans';
import { cappedRetryAfter, rpcFetch } from './rpc-fetch';

/** A viem chain for a network-table entry (only the fields viem needs to sign and call). */
export function viemChain(network: EvmNetwork): Chain {
  if (network.chainId === undefined) throw new Error(`network ${network.id} has no chain id`);
  return defineChain({
    id: network.chainId,
    name: network.id,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: network.rpcUrls } },
    testnet: network.testnet,
  });
}

const cache = new Map<string, PublicClient>();

/**
 * One public client per network, over a `fallback` transport of the network's RPC URLs. Each call
 * is bounded (timeout) and retried by viem a couple of times before the activity's own retry, and
 * is a span of the active trace (rpc-spans.ts). With `batch`, the calls made before a 0 ms timer
 * fires go in one JSON-RPC batch (up to 1,000), in the order they were made: the relayer's queued
 * broadcasts, made in one go. One such client per network, shared by the relayers of every lane.
 */
export function publicClientFor(network: EvmNetwork, opts: { batch?: true } = {}): PublicClient {
  const key = `${network.id}|${network.rpcUrls.join(',')}|${opts.batch ?? false}`;
  let client = cache.get(key);
  if (!client) {
    // A provider's Retry-After is honoured up to rpcRetryAfterMaxMs (a receipt wait keeps asking).
    const fetchFn = cappedRetryAfter(rpcFetch, network.rpcRetryAfterMaxMs);
    const config = { timeout: 10_000, retryCount: 2, retryDelay: 50, batch: opts.batch, fetchFn };
    const transport = fallback(
      network.rpcUrls.map((url) => tracedHttp(url, network.id, config)),
      { rank: false },
    );
    client = createPublicClient({ chain: viemChain(network), transport, pollingInterval: 50 }) as PublicClient;
    cache.set(key, client);
  }
  return client;
}

/**
 * A client for a call that must be asked once, of one node, within `timeoutMs`: the network's first
 * RPC URL, no retry and no fallback to another URL (which would ask again, and may answer "already
 * known" for what the first node took). The relayer's synchronous broadcast, which holds up its later ones.
 */
export function oneShotClientFor(network: EvmNetwork, timeoutMs: number): PublicClient {
  const transport = tracedHttp(network.rpcUrls[0], network.id, { timeout: timeoutMs, retryCount: 0 });
  return createPublicClient({ chain: viemChain(network), transport }) as PublicClient;
}
