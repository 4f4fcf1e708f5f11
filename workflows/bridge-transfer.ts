import { ParentClosePolicy, executeChild, proxyActivities, sleep, log, workflowInfo } from '@temporalio/workflow';
import type { AttestedMessage, CrossChainActivities } from '../activities/crosschain';
import type { BridgeTransferInput, BridgeTransferResult, CrossChainSettleInput } from '../src/schemes/eip3009-crosschain/types';
import { bridgeWorkflowId } from '../src/temporal/workflow-ids';
import { x402SearchAttributes } from '../src/temporal/search-attributes';
import { x402States } from './x402-state';

// A poll is one bounded HTTP call (10 s): a short timeout lets a crashed worker's poll be retried soon.
const { fetchBridgeAttestation, recordBridgeTransfer } = proxyActivities<CrossChainActivities>({
  startToCloseTimeout: '15s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});
const { submitBridgeMint } = proxyActivities<CrossChainActivities>({
  startToCloseTimeout: '60s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});
const { awaitBridgeMint } = proxyActivities<CrossChainActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '5s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

/** Attestation polling: durable timers from 500 ms doubling to 10 s, for at most 6 hours (or the input's budget). */
const POLL_FIRST_MS = 500;
const POLL_MAX_MS = 10_000;
const ATTESTATION_BUDGET_MS = 6 * 3600_000;

/**
 * The bridge leg of one cross-chain settlement (`bridge:<sourceNetwork>:<sourceDomain>:<sourceTx>`,
 * X402Kind `bridge`): wait for the attestation of the burn, then mint on the destination and pay out
 * in one transaction through the destination relayer. Ends `delivered`, or `needs_review` when the
 * attestation never comes or the message cannot be delivered by us (an operator's case: the burned
 * funds are not lost, the message can still be delivered by hand).
 */
export async function bridgeTransferWorkflow(input: BridgeTransferInput): Promise<BridgeTransferResult> {
  const state = x402States('bridge');
  const needsReview = async (error: string): Promise<BridgeTransferResult> => {
    log.error('bridge transfer needs review', { error });
    await recordBridgeTransfer(input, 'needs_review', { error });
    state('needs_review');
    return { state: 'needs_review', error };
  };
  await recordBridgeTransfer(input, 'burned');

  let attested: AttestedMessage;
  for (let waited = 0, delay = POLL_FIRST_MS; ; waited += delay, delay = Math.min(delay * 2, POLL_MAX_MS)) {
    const poll = await fetchBridgeAttestation(input);
    if (poll.status === 'complete') {
      attested = poll;
      break;
    }
    if (waited >= (input.attestationBudgetMs ?? ATTESTATION_BUDGET_MS)) return needsReview('no attestation within the time budget');
    await sleep(delay);
  }
  await recordBridgeTransfer(input, 'attested', { bridgeNonce: attested.nonce });
  state('attested');

  // The message the service attested (CCTP V2 fills in its nonce and fee), not the one we emitted.
  const minted = await submitBridgeMint(input, attested);
  if (!minted.submitted) return needsReview(minted.error);
  state('minting');

  const done = await awaitBridgeMint(input);
  if (!done.ok) return needsReview('mint transaction reverted');
  state('delivered');
  return {
    state: 'delivered',
    mintTx: done.mintTx,
    received: done.received,
    bridgeFee: done.bridgeFee,
    fee: done.fee,
    payoutAmount: done.payoutAmount,
  };
}

/** The burn a bridge leg delivers: the source transaction and the message read from its receipt. */
export interface Burn {
  transaction: string;
  message: string;
}

/**
 * Runs the bridge leg of a cross-chain settlement as a child (`bridge:<source>:<domain>:<burn tx>`)
 * and returns how it ended. Used by the settlement itself and by an operator's retry of a top-up's
 * leg (a new run of the same id: the mint keeps its write-ahead id, so it is still sent at most once).
 */
export async function runBridgeLeg(input: CrossChainSettleInput, burn: Burn): Promise<BridgeTransferResult> {
  const bridgeId = bridgeWorkflowId(input.network, input.sourceDomain, burn.transaction);
  const child: BridgeTransferInput = {
    bridgeId,
    settlementId: input.workflowId,
    organizationId: input.organizationId,
    payer: input.paymentPayload.payload.authorization.from,
    sourceNetwork: input.network,
    destinationNetwork: input.destinationNetwork,
    sourceDomain: input.sourceDomain,
    destinationDomain: input.destinationDomain,
    sourceTx: burn.transaction,
    message: burn.message,
    amount: input.paymentPayload.payload.authorization.value,
    payout: input.payout,
    fee: input.fee,
    feeRecipient: input.feeRecipient,
    ...(input.attestationBudgetMs !== undefined ? { attestationBudgetMs: input.attestationBudgetMs } : {}),
  };
  return executeChild(bridgeTransferWorkflow, {
    workflowId: bridgeId,
    taskQueue: workflowInfo().taskQueue,
    args: [child],
    // The bridge leg must finish even if someone terminates this parent.
    parentClosePolicy: ParentClosePolicy.ABANDON,
    typedSearchAttributes: x402SearchAttributes({
      kind: 'bridge',
      network: input.destinationNetwork,
      payer: child.payer,
      state: 'burned',
      organization: input.organizationId,
    }),
  });
}
