import type { RoutingView } from '../scheme';

/**
 * Batched nanopayments (spec routing step 2): requirements marked `GatewayWalletBatched` v1. The
 * upstream batching gateway verifies and moves the money; the route that forwards to it is
 * `batchedRoute` (src/settle/batched.ts).
 */
export const claimsBatched = (body: RoutingView): boolean => body.extra?.name === 'GatewayWalletBatched' && body.extra?.version === '1';
