import { condition, proxyActivities, setHandler, startChild } from '@temporalio/workflow';
import type { CrossChainActivities } from '../activities/crosschain';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { type BridgeTransferResult, type CrossChainOutcome, type CrossChainSettleInput } from '../src/schemes/eip3009-crosschain/types';
import { settlementRejection } from '../src/settle/types';
import { crossChainSettlementWorkflow, sourceTransactionSignal } from './crosschain-settlement';
import { runBridgeLeg } from './bridge-transfer';
import type { SettleResponse } from '../src/x402/schemas';
import { x402SearchAttributes } from '../src/temporal/search-attributes';

// As the cross-chain settlement reads its burn and records its outcome.
const { awaitBridgeBurn } = proxyActivities<CrossChainActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '5s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});
const { recordCrossChainOutcome } = proxyActivities<CrossChainActivities>({
  startToCloseTimeout: '60s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

/** How the settlement of a cross-chain top-up ended. */
export type BridgedSettlement =
  | { kind: 'rejected'; reason: string }
  | { kind: 'reused' }
  | { kind: 'reverted' }
  | { kind: 'needs_review'; settlementTx: string; error: string }
  | { kind: 'delivered'; settlementTx: string; bridge: BridgeTransferResult & { mintTx: string; bridgeFee: string; payoutAmount: string } };

/**
 * The bridge leg of a cross-chain top-up: runs the service's cross-chain settlement as a child (id
 * `settle:<network>:<payer>:<nonce>`, the same business key as every settlement of that
 * authorization; its own child is the bridge transfer, mint and payout to the relayer on Base).
 * `onBridging` runs once the source transaction succeeded (the top-up moves to `bridging`).
 */
export async function settleAcrossBridge(
  input: CrossChainSettleInput,
  onBridging: (response: SettleResponse) => Promise<void>,
): Promise<BridgedSettlement> {
  let burned: SettleResponse | undefined;
  setHandler(sourceTransactionSignal, (response) => void (burned = response));

  let child;
  try {
    child = await startChild(crossChainSettlementWorkflow, {
      workflowId: input.workflowId,
      args: [input],
      // As the API starts it: a settlement that completed elsewhere is not run again.
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      typedSearchAttributes: x402SearchAttributes({
        kind: 'settle',
        network: input.network,
        payer: input.paymentPayload.payload.authorization.from,
        state: 'verifying',
        organization: input.organizationId,
      }),
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return { kind: 'reused' };
    throw err;
  }

  let outcome: CrossChainOutcome | undefined;
  let failure: unknown;
  const finished = child.result().then(
    (o) => void (outcome = o as CrossChainOutcome),
    (err) => void (failure = err),
  );
  await condition(() => burned !== undefined || outcome !== undefined || failure !== undefined);
  if (burned?.success) await onBridging(burned);
  await finished;

  if (failure !== undefined) {
    const rejected = settlementRejection(failure);
    if (rejected) return { kind: 'rejected', reason: rejected.response?.errorReason ?? 'settlement_failed' };
    throw failure;
  }
  const { response, bridge } = outcome!;
  if (!response.success) return { kind: 'reverted' };
  return bridgedOutcome(response.transaction, bridge);
}

/**
 * An operator's retry of a top-up whose bridge leg ended in `needs_review`: reads the burn from the
 * recorded source receipt (the message to deliver) and runs the bridge leg again; a delivery moves
 * the settlement record to `settled`, as the cross-chain settlement would have.
 */
export async function retryBridge(input: CrossChainSettleInput): Promise<BridgedSettlement> {
  const burn = await awaitBridgeBurn(input);
  if (!burn.response.success || !burn.message) return { kind: 'reverted' };
  const result = await runBridgeLeg(input, {
    transaction: burn.response.transaction,
    message: burn.message,
  });
  if (result.state === 'delivered') await recordCrossChainOutcome(input, 'settled');
  return bridgedOutcome(burn.response.transaction, result);
}

function bridgedOutcome(settlementTx: string, bridge: BridgeTransferResult | undefined): BridgedSettlement {
  if (bridge?.state !== 'delivered' || !bridge.mintTx || bridge.bridgeFee === undefined || bridge.payoutAmount === undefined) {
    return { kind: 'needs_review', settlementTx, error: `bridge transfer needs review: ${bridge?.error ?? 'no bridge result'}` };
  }
  return { kind: 'delivered', settlementTx, bridge: bridge as Extract<BridgedSettlement, { kind: 'delivered' }>['bridge'] };
}
