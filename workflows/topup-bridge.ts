import { condition, defineSignal, setHandler, startChild } from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  SOURCE_TRANSACTION_SIGNAL,
  type BridgeTransferResult,
  type CrossChainOutcome,
  type CrossChainSettleInput,
} from '../src/schemes/eip3009-crosschain/types';
import { settlementRejection } from '../src/settle/types';
import type { SettleResponse } from '../src/x402/schemas';
import { x402SearchAttributes } from '../src/temporal/search-attributes';

/** The cross-chain settlement child signals this once its source transaction (the burn) succeeded. */
const sourceTransactionSignal = defineSignal<[SettleResponse]>(SOURCE_TRANSACTION_SIGNAL);

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
    child = await startChild('crossChainSettlementWorkflow', {
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
  if (bridge?.state !== 'delivered' || !bridge.mintTx || bridge.bridgeFee === undefined || bridge.payoutAmount === undefined) {
    return {
      kind: 'needs_review',
      settlementTx: response.transaction,
      error: `bridge transfer needs review: ${bridge?.error ?? 'no bridge result'}`,
    };
  }
  return {
    kind: 'delivered',
    settlementTx: response.transaction,
    bridge: bridge as Extract<BridgedSettlement, { kind: 'delivered' }>['bridge'],
  };
}
