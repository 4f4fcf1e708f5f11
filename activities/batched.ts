import { ApplicationFailure } from '@temporalio/activity';
import type { Config } from '../src/config';
import type { NetworkTable } from '../src/chains/networks';
import { forwardToGateway, GatewayUnavailable } from '../src/schemes/batched/gateway-client';
import type { BatchedSettleInput } from '../src/schemes/batched/types';
import { heartbeatWhile } from './heartbeat';

export interface BatchedActivityDeps {
  config: Pick<Config, 'GATEWAY_API_URL' | 'GATEWAY_API_URL_TESTNET' | 'GATEWAY_TIMEOUT_MS'>;
  networks: NetworkTable;
}

/**
 * Activity of the batched settlement workflow: one bounded POST to the upstream gateway's settle.
 * Repeating it is safe: the upstream answers a repeated authorization (same payer, nonce and
 * signature) with the transfer it already accepted, and refuses any other use of the nonce.
 */
export function createBatchedActivities(deps: BatchedActivityDeps) {
  return {
    async forwardBatchedSettle(input: BatchedSettleInput): Promise<Record<string, unknown>> {
      const network = deps.networks.get(input.network);
      if (!network) throw ApplicationFailure.nonRetryable(`unknown network ${input.network}`, 'gateway_not_enabled');
      try {
        return await heartbeatWhile(() => forwardToGateway(deps.config, network, 'settle', input.forwarded));
      } catch (err) {
        if (err instanceof GatewayUnavailable) throw ApplicationFailure.retryable(err.message, 'GatewayUnavailable');
        throw err;
      }
    },
  };
}

export type BatchedActivities = ReturnType<typeof createBatchedActivities>;
