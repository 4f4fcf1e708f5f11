import { proxyActivities, sleep, log } from '@temporalio/workflow';
import type { CrossChainActivities } from '../activities/crosschain';
import type { BridgeTransferInput, BridgeTransferResult } from '../src/schemes/eip3009-crosschain/types';
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
 * The bridge leg of one cross-chain settlement (`bridge:<sourceNetwork>:<sourceDomain>:<nonce>`,
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

  let attestation: `0x${string}` | undefined;
  for (let waited = 0, delay = POLL_FIRST_MS; ; waited += delay, delay = Math.min(delay * 2, POLL_MAX_MS)) {
    const poll = await fetchBridgeAttestation(input);
    if (poll.status === 'complete') {
      attestation = poll.attestation;
      break;
    }
    if (waited >= (input.attestationBudgetMs ?? ATTESTATION_BUDGET_MS)) return needsReview('no attestation within the time budget');
    await sleep(delay);
  }
  await recordBridgeTransfer(input, 'attested');
  state('attested');

  const minted = await submitBridgeMint(input, attestation);
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
