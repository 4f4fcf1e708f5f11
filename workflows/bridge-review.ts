import { ActivityFailure, ApplicationFailure, patched, proxyActivities } from '@temporalio/workflow';
import type { CrossChainActivities } from '../activities/crosschain';
import type { BridgeRefundActivities } from '../activities/bridge-refund';
import type {
  BridgeRefund,
  BridgeTransferResult,
  CrossChainOutcome,
  CrossChainSettleInput,
  TreasuryDelivery,
} from '../src/schemes/eip3009-crosschain/types';
import type { StateOf } from '../src/temporal/states';
import { runBridgeLeg, type Burn } from './bridge-transfer';
import type { OperatorDesk } from './operator-desk';
import { parkedFor } from './park';

/**
 * Patch id of a bridge refund mined and reverted waiting in needs_review: before it, the activity
 * retried the same reverted receipt forever (`RefundReverted` was retryable).
 */
export const BRIDGE_REFUND_PARK_REVERTED_PATCH = 'bridge-refund-park-reverted-v1';

const { recordCrossChainOutcome } = proxyActivities<CrossChainActivities>({
  startToCloseTimeout: '60s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});
// Money moves: retried until the outcome is known (write-ahead id), except a refund our records do not owe.
const { refundBridgePayer } = proxyActivities<BridgeRefundActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '10s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s', nonRetryableErrorTypes: ['RefundNotOwed'] },
});

// Owed once the leg is abandoned: retried until the message can be delivered (no attestation yet, a call that would revert).
const { deliverAbandonedLeg } = proxyActivities<BridgeRefundActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '10s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '60s', nonRetryableErrorTypes: ['TreasuryDeliveryNotOwed'] },
});

/** How a reviewed leg ended: delivered after a retry, or abandoned with the payer refunded. */
export type Reviewed = { bridge: BridgeTransferResult; refund?: BridgeRefund };

/**
 * A plain cross-chain settlement whose bridge leg needs review waits here for operator decisions
 * (README "For operators") until the leg is delivered (`retry-mint`: the same leg run again) or
 * abandoned and the payer refunded (`abandon-bridge`). A retry that still does not deliver, or a
 * refund our records do not owe, answers its update and the settlement waits again. The final answer
 * is the caller's (`desk.answer` with the workflow's outcome, once recorded).
 */
export async function reviewBridgeLeg(
  input: CrossChainSettleInput,
  leg: Burn,
  bridge: BridgeTransferResult,
  desk: OperatorDesk<CrossChainOutcome>,
  state: (s: StateOf<'settle'>) => void,
  outcomeOf: (r: Reviewed) => CrossChainOutcome,
): Promise<Reviewed> {
  const move = async (
    s: 'settled' | 'needs_review' | 'bridging' | 'refunding' | 'refunded',
    by?: Parameters<typeof recordCrossChainOutcome>[2],
  ) => {
    await recordCrossChainOutcome(input, s, by);
    state(s);
  };
  let refundAttempt = 0;
  for (;;) {
    const action = await desk.next();
    const by = { operator: action.operator, operatorReason: `${action.action}: ${action.reason}` };
    if (action.action === 'abandon-bridge') {
      await move('refunding', by);
      const refund = await refundBridgePayer(input, ...(refundAttempt ? [refundAttempt] : [])).catch((err: unknown) => {
        const failure = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause : undefined;
        if (failure?.type === 'RefundNotOwed') return failure;
        if (failure?.type === 'RefundReverted' && patched(BRIDGE_REFUND_PARK_REVERTED_PATCH)) {
          // Mined and reverted (a proven outcome): nothing was paid; the next refund is a fresh attempt.
          refundAttempt++;
          parkedFor('the bridge refund', failure.message);
          return failure;
        }
        throw err;
      });
      if (refund instanceof ApplicationFailure) {
        // Not owed by our records, or mined and reverted: nothing moved; the settlement waits again.
        await move('needs_review');
        desk.refuse(refund.message);
        continue;
      }
      await move('refunded');
      return { bridge, refund };
    }
    await move('bridging', by);
    bridge = await runBridgeLeg(input, leg);
    if (bridge.state === 'delivered') {
      await move('settled');
      return { bridge };
    }
    await move('needs_review');
    desk.answer(outcomeOf({ bridge }));
  }
}

/**
 * An abandoned leg whose payer was refunded: its message delivered on the destination to the
 * treasury (activities/bridge-refund.ts `deliverAbandonedLeg`), so the burned USDC does not stay in
 * the bridge. A leg our records say is not abandoned answers `delivered: false` with the reason.
 */
export async function deliverToTreasury(input: CrossChainSettleInput): Promise<TreasuryDelivery> {
  return deliverAbandonedLeg(input).catch((err: unknown) => {
    const cause = err instanceof ActivityFailure ? err.cause : undefined;
    if (!(cause instanceof ApplicationFailure) || cause.type !== 'TreasuryDeliveryNotOwed') throw err;
    return { treasury: '', delivered: false, error: cause.message };
  });
}
