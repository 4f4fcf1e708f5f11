import type { SettleRoute } from '../scheme';
import { settleBatched } from './settle';
import { verifyBatched } from './verify';

/**
 * Batched nanopayments (spec routing step 2, requirements marked `GatewayWalletBatched` v1): the
 * upstream batching gateway verifies and moves the money in its batches, so this route forwards
 * (a short workflow for settle) instead of running the settlement skeleton.
 */
export const batched: SettleRoute = {
  route: 'batched',
  claims: (body) => body.extra?.name === 'GatewayWalletBatched' && body.extra?.version === '1',
  settle: settleBatched,
  verify: verifyBatched,
};
