import { ApplicationFailure, ChildWorkflowFailure, executeChild, proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { TopUpActivities } from '../activities/topup';
import type { SettleOutcome } from '../src/settle/types';
import { SETTLEMENT_REJECTED } from '../src/settle/types';
import type { SettleResponse } from '../src/x402/schemas';
import { TOPUP_DESTINATION_NETWORK, type TopUpInput, type TopUpOutcome, type TopUpState } from '../src/topup/types';
import { topupReasonForSettle } from '../src/topup/reasons';
import { GAS_PROTECTED_NETWORKS } from '../src/topup/gas-protection';
import { X402Kind, X402Network, X402Organization, X402Payer, X402State } from '../temporal/search-attributes';

// Records and reads: quick, retried a few times.
const { recordTopUp, checkSettlementGas } = proxyActivities<TopUpActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '5s' },
});
// Money moves: retried until the outcome is known (every activity is idempotent).
const { ensureMerchantAllowance, submitDeposit, awaitDepositReceipt, refundPayer } = proxyActivities<TopUpActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '10s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

/**
 * One merchant top-up, id `topup:<merchant>:<payer>:<nonce>`: settle the payment through the
 * service's settlement workflow (a child keyed `settle:<network>:<payer>:<nonce>`, so the
 * authorization is still settled at most once whoever asks), then credit the buyer on the merchant
 * contract from the relayer wallet; when the deposit can no longer succeed, refund the delivered
 * amount to the payer. Cross-chain sources add a `bridging` leg between settlement and deposit
 * (designed: docs/decisions.md), not run yet.
 */
export async function topUpWorkflow(input: TopUpInput): Promise<TopUpOutcome> {
  const move = async (state: TopUpState, extra: Parameters<typeof recordTopUp>[2] = {}) => {
    upsertSearchAttributes([{ key: X402State, value: state }]);
    await recordTopUp(input, state, extra);
  };
  const fail = async (errorReason: string, error: string): Promise<TopUpOutcome> => {
    await move('failed', { errorReason, error });
    return { state: 'failed', errorReason };
  };

  await move('settling');
  if (GAS_PROTECTED_NETWORKS.has(input.network)) {
    const gas = await checkSettlementGas(input);
    if (!gas.broadcast) {
      // Nothing was sent: the workflow fails so the same payment can run again later (reuse policy).
      await move('deferred', { errorReason: gas.reason, error: 'settlement deferred by ethereum gas protection' });
      throw ApplicationFailure.nonRetryable(gas.reason, 'GasProtection');
    }
  }
  if (input.network !== TOPUP_DESTINATION_NETWORK) {
    // Cross-chain: the bridge leg (settle on the source, `bridging`, then deposit the delivered
    // amount with `fillTx`) plugs in here. Until it exists, refuse before anything settles.
    return fail('wrong_network', `cross-chain top-ups from ${input.network} are not available yet`);
  }

  let settled: SettleOutcome;
  try {
    settled = await executeChild('settlementWorkflow', {
      workflowId: input.settle.workflowId,
      args: [input.settle],
      // As the API starts it: a settlement that completed elsewhere (POST /v1/settle) is not run again.
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      typedSearchAttributes: [
        { key: X402Kind, value: 'settle' },
        { key: X402Network, value: input.network },
        { key: X402Payer, value: input.payer.toLowerCase() },
        { key: X402State, value: 'verifying' },
        { key: X402Organization, value: input.settle.organizationId },
      ],
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return fail('authorization_reused', 'the authorization is being settled by another request');
    const cause = err instanceof ChildWorkflowFailure ? err.cause : undefined;
    if (cause instanceof ApplicationFailure && cause.type === SETTLEMENT_REJECTED) {
      const response = cause.details?.[0] as SettleResponse | undefined;
      const reason = response?.errorReason ?? 'settlement_failed';
      return fail(topupReasonForSettle(reason), `settlement rejected: ${reason}`);
    }
    throw err;
  }
  if (!settled.response.success) return fail('settlement_failed', 'the settlement transaction reverted');
  const settlementTx = settled.response.transaction;

  await move('depositing', { settlementTx });
  await ensureMerchantAllowance(input);
  const submitted = await submitDeposit(input);
  let detail = submitted.submitted ? '' : submitted.detail;
  if (submitted.submitted) {
    const receipt = await awaitDepositReceipt(input);
    if (receipt.status === 'success') {
      await move('deposited', { settlementTx, depositTx: receipt.hash });
      return { state: 'deposited' };
    }
    detail = `deposit ${receipt.hash} reverted`;
  }

  // The deposit can no longer succeed (e.g. a concurrent top-up consumed the credit headroom):
  // the delivered amount goes back to the payer.
  const error = `deposit failed (${detail}); the delivered amount was refunded to the payer`;
  await move('refunding', { settlementTx, errorReason: 'deposit_failed', error });
  const refund = await refundPayer(input);
  await move('refunded', { settlementTx, errorReason: 'deposit_failed', error, refundTx: refund.hash });
  return { state: 'refunded', errorReason: 'deposit_failed' };
}
