import type { ServiceDeps } from '../../deps';
import type { AuthContext } from '../../auth/key-mode';
import { callerOrganization } from '../../auth/organizations';
import type { EntityManager } from '@mikro-orm/core';
import { gatewaySupported } from './gateway-client';
import { networkStatus } from './gateway-networks';

export const GATEWAY_STATUS_MESSAGE = 'Batched nanopayments are settled through the upstream batching gateway';

/**
 * The gateway status record of GET /v1/batched-sample (spec "Gateway status record").
 * `gatewaySupported` asks the testnet gateway for test keys and the mainnet gateway for live keys.
 */
export async function gatewayStatusRecord(deps: ServiceDeps, em: EntityManager, auth: AuthContext, now = new Date()) {
  const org = await callerOrganization(em, auth);
  const testnet = auth.testNet !== false;
  const supported = await gatewaySupported(deps.config, testnet).catch((err: Error) => {
    deps.logger.warn({ err: err.message }, 'batched-sample: upstream supported kinds unavailable');
    return null;
  });
  return {
    message: GATEWAY_STATUS_MESSAGE,
    organization: org?.name || 'Unknown',
    organizationId: auth.organizationId,
    gatewayMainnetEnabled: deps.config.GATEWAY_MAINNET_ENABLED,
    networkStatus: networkStatus(deps.networks, deps.config.GATEWAY_MAINNET_ENABLED),
    gatewaySupported: supported,
    endpoints: {
      settle: 'POST /v1/settle',
      verify: 'POST /v1/verify',
      batchedSettle: 'POST /v1/batched/settle',
      batchedVerify: 'POST /v1/batched/verify',
      status: 'GET /v1/batched-sample',
    },
    usage: {
      description:
        'Send a batched payment to POST /v1/settle: paymentRequirements.extra.name "GatewayWalletBatched", extra.version "1", ' +
        "extra.verifyingContract the gateway wallet, asset the gateway wallet (swapped for the network's USDC before forwarding).",
      note: 'batchedSettle and batchedVerify are names only: batched payments use POST /v1/settle and POST /v1/verify.',
    },
    timestamp: now.toISOString(),
  };
}
