import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Hex } from 'viem';
import { waitUntil } from '../../devnet/process';
import type { FaultRule, RpcProviderDouble } from '../../devnet/rpc-provider-double';

/**
 * Kill tests whose action must be unfinished at the kill: the worker reaches the chain through the
 * provider double (devnet/rpc-provider-double.ts), whose broadcasts are made to hang, so an action
 * that was accepted has signed and recorded its transaction, which never reaches the node.
 */
const { EventType } = temporal.api.enums.v1;

/** Every broadcast hangs: never forwarded to the node, never answered. */
export const HOLD_BROADCASTS: FaultRule[] = [
  { methods: ['eth_sendRawTransaction', 'eth_sendRawTransactionSync'], fault: 'hang', probability: 1 },
];

/** The hash of the first broadcast the provider held, other than `except` (a transaction already out). */
export const heldBroadcast = (provider: RpcProviderDouble, except: string[] = []): Promise<Hex> =>
  waitUntil(
    'a broadcast held by the provider',
    async () => provider.calls.find((c) => c.fault === 'hang' && c.hash !== undefined && !except.includes(c.hash))?.hash as Hex | undefined,
    { timeoutMs: 60_000, intervalMs: 50 },
  );

/** Whether the workflow's history has accepted the update `updateId`, and completed it. */
export async function updateEvents(handle: WorkflowHandle, updateId: string): Promise<{ accepted: boolean; completed: boolean }> {
  const events = (await handle.fetchHistory()).events ?? [];
  return {
    accepted: events.some(
      (e) =>
        e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED &&
        e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.meta?.updateId === updateId,
    ),
    completed: events.some(
      (e) =>
        e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED &&
        e.workflowExecutionUpdateCompletedEventAttributes?.meta?.updateId === updateId,
    ),
  };
}
