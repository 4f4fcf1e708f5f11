import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { BatchedActivities } from '../activities/batched';
import type { SettlementActivities } from '../activities/settlement';
import {
  BATCHED_FORWARD_FAILED,
  BATCHED_REJECTED,
  BATCHED_ROUTE,
  type BatchedSettleInput,
  type BatchedSettleOutcome,
} from '../src/schemes/batched/types';
import type { StateOf } from '../src/temporal/states';
import { x402States } from './x402-state';

// A few quick tries, then the caller hears 500 batched_settle_error (spec) instead of waiting.
const { forwardBatchedSettle } = proxyActivities<BatchedActivities>({
  startToCloseTimeout: '3m', // above any GATEWAY_TIMEOUT_MS; a dead worker is noticed by the heartbeat
  heartbeatTimeout: '2s',
  retry: {
    initialInterval: '200ms',
    backoffCoefficient: 2,
    maximumInterval: '2s',
    maximumAttempts: 3,
    nonRetryableErrorTypes: ['gateway_not_enabled'],
  },
});
const { recordSettlement } = proxyActivities<SettlementActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

/**
 * One batched nanopayment, keyed `batched:<network>:<payer>:<nonce>`: forward it to the upstream
 * batching gateway, which moves the money in its batches. Accepted -> completes with the upstream
 * result (every repeat attaches to it); refused or upstream unreachable -> fails (recorded), so a
 * corrected or later retry runs again. States: forwarding -> accepted | rejected | failed.
 */
export async function batchedSettlementWorkflow(input: BatchedSettleInput): Promise<BatchedSettleOutcome> {
  const move = x402States('settle');
  const state = async (
    s: StateOf<'settle'>,
    extra: { response?: Record<string, unknown>; errorReason?: string | null; transaction?: string | null } = {},
  ) => {
    move(s);
    await recordSettlement({
      id: input.workflowId,
      organizationId: input.organizationId,
      apiKeyId: input.apiKeyId,
      route: BATCHED_ROUTE,
      network: input.network,
      payer: input.payer.toLowerCase(),
      recipient: input.recipient.toLowerCase(),
      amount: input.amount,
      fee: '0',
      requestId: input.requestId ?? null,
      state: s,
      transaction: extra.transaction ?? null,
      errorReason: extra.errorReason ?? null,
      response: extra.response ? JSON.stringify(extra.response) : null,
    });
  };

  await state('forwarding');
  let upstream: Record<string, unknown>;
  try {
    upstream = await forwardBatchedSettle(input);
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    await state('failed', { errorReason: 'batched_settle_error' });
    throw ApplicationFailure.nonRetryable(`upstream gateway unreachable: ${err.cause?.message ?? err.message}`, BATCHED_FORWARD_FAILED);
  }
  if (upstream.success !== true) {
    const reason = typeof upstream.errorReason === 'string' ? upstream.errorReason : 'rejected';
    await state('rejected', { errorReason: reason, response: upstream });
    throw ApplicationFailure.nonRetryable(`upstream gateway refused the payment: ${reason}`, BATCHED_REJECTED, upstream);
  }
  await state('accepted', { response: upstream, transaction: typeof upstream.transaction === 'string' ? upstream.transaction : null });
  return { upstream, organizationId: input.organizationId };
}
