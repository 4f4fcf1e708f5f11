import { continueAsNew, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { SettlementActivities } from '../activities/settlement';
import type { WithdrawalActivities } from '../activities/withdrawal';
import { WITHDRAWAL_ROUTE, type WithdrawalInput, type WithdrawalRecord, type WithdrawalState } from '../src/gateway/withdrawal-types';
import { x402States } from './x402-state';
import { confirmOrPark } from './park';

// Once money may move, retry until the outcome is known: every activity is idempotent.
const { initiateGatewayWithdrawal, withdrawFromGateway, readWithdrawalBlock } = proxyActivities<WithdrawalActivities>({
  startToCloseTimeout: '60s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});
const { awaitWithdrawalReceipt } = proxyActivities<WithdrawalActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '5s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
});
const { recordSettlement } = proxyActivities<SettlementActivities>({
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '30s' },
});

/** Waits per run before continuing as new, so a 7-day wait never grows one history without bound. */
const POLLS_PER_RUN = 500;

/**
 * A gateway-wallet withdrawal of the facilitator's own balance (spec "States and transitions"):
 * `initiateWithdrawal` moves `amount` from available to withdrawing; the workflow then waits
 * durably (Temporal timers, polling the block number) until the chain reaches `withdrawalBlock`,
 * and calls `withdraw`, which sends the balance to the facilitator's wallet. States: initiating ->
 * waiting -> withdrawing -> withdrawn, or failed (recorded with the contract's reason).
 */
export async function withdrawalWorkflow(input: WithdrawalInput): Promise<WithdrawalRecord> {
  const rec: WithdrawalRecord = {
    id: input.workflowId,
    network: input.network,
    gatewayWallet: input.gatewayWallet,
    token: input.token,
    depositor: input.depositor,
    amount: input.amount,
    state: 'initiating',
    initiateTransaction: input.resume?.initiateTransaction ?? null,
    withdrawalDelayBlocks: input.withdrawalDelayBlocks ?? null,
    withdrawalBlock: null,
    withdrawTransaction: null,
    errorReason: null,
    message: null,
  };
  const move = x402States('withdrawal');
  const state = async (s: WithdrawalState, patch: Partial<WithdrawalRecord> = {}) => {
    Object.assign(rec, patch, { state: s });
    move(s);
    await recordSettlement({
      id: input.workflowId,
      organizationId: input.organizationId,
      apiKeyId: input.apiKeyId,
      route: WITHDRAWAL_ROUTE,
      network: input.network,
      payer: input.depositor.toLowerCase(),
      recipient: input.depositor.toLowerCase(),
      amount: input.amount,
      fee: '0',
      requestId: input.requestId ?? null,
      state: s,
      transaction: rec.withdrawTransaction ?? rec.initiateTransaction,
      errorReason: rec.errorReason,
      response: JSON.stringify(rec),
    });
  };
  /**
   * A step's receipt. Unproven past `parkAfterMs`, the workflow shows `needs_review` to operators
   * (workflows/park.ts; the record keeps its state) and goes on confirming.
   */
  const confirmed = (step: 'initiate' | 'withdraw') =>
    confirmOrPark(
      () => awaitWithdrawalReceipt({ network: input.network, workflowId: input.workflowId, step }),
      `the withdrawal's ${step} transaction`,
      input.parkAfterMs,
      () => move('needs_review'),
    );
  const fail = async (errorReason: string, message: string) => {
    await state('failed', { errorReason, message });
    return rec;
  };

  if (!input.resume) {
    await state('initiating');
    const init = await initiateGatewayWithdrawal(input);
    if (!init.submitted) return fail('withdrawal_rejected', init.detail);
    await state('initiating', { initiateTransaction: init.hash });
    const receipt = await confirmed('initiate');
    if (receipt.status !== 'success') return fail('withdrawal_rejected', `initiateWithdrawal reverted in ${init.hash}`);
  }

  for (let polls = 0; ;) {
    // Wait until the chain reaches withdrawalBlock (re-read: a later initiation restarts the wait).
    const read = await readWithdrawalBlock(input);
    let { withdrawalBlock, blockNumber } = read;
    // The delay as the contract has it (histories from before it was read carry none: keep the input's).
    const withdrawalDelayBlocks = read.withdrawalDelay ?? rec.withdrawalDelayBlocks;
    if (rec.state !== 'waiting' || rec.withdrawalBlock !== withdrawalBlock)
      await state('waiting', { withdrawalBlock, withdrawalDelayBlocks });
    while (BigInt(blockNumber) < BigInt(withdrawalBlock)) {
      if (++polls >= POLLS_PER_RUN || workflowInfo().continueAsNewSuggested) {
        return continueAsNew<typeof withdrawalWorkflow>({ ...input, resume: { initiateTransaction: rec.initiateTransaction ?? '' } });
      }
      await sleep(input.pollMs);
      ({ withdrawalBlock, blockNumber } = await readWithdrawalBlock(input));
    }

    await state('withdrawing');
    const sent = await withdrawFromGateway(input);
    if (!sent.submitted && sent.reason === 'not_ready') continue; // the block moved on: wait again
    if (!sent.submitted) return fail('withdrawal_failed', sent.detail);
    await state('withdrawing', { withdrawTransaction: sent.hash });
    const receipt = await confirmed('withdraw');
    if (receipt.status !== 'success') return fail('withdrawal_failed', `withdraw reverted in ${sent.hash}`);
    await state('withdrawn');
    return rec;
  }
}
