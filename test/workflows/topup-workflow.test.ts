import { randomBytes } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TopUpInput } from '../../src/topup/types';
import { settlementStepActivities } from '../../activities/settlement';
import { updateRefusal, useWorkflowTestEnv } from '../support/workflow-env';
import { X402State } from '../../src/temporal/search-attributes';
import { PARKED_MEMO } from '../../workflows/park';
import { refundTopUpUpdate } from '../../workflows/operator-actions';

/**
 * Orchestration of the TopUpWorkflow on a local Temporal server with stand-in activities, for the
 * branches the chain cannot be steered into on demand: ethereum gas protection (nothing settles,
 * the workflow fails so the payment may run later), a deposit that reverts *on chain* after it was
 * signed (refund), and a settlement the child rejects. The real activities are covered end to end
 * in topup.test.ts and topup-durability.test.ts.
 */
describe('TopUpWorkflow orchestration (mocked activities)', () => {
  const t = useWorkflowTestEnv();
  const calls: string[] = [];
  const records: { state: string; extra: Record<string, unknown> }[] = [];
  let scenario: { gas?: boolean; depositReverts?: boolean; settleRejects?: string; depositHeld?: Promise<void> } = {};

  const activities = {
    async recordTopUp(_input: TopUpInput, state: string, extra: Record<string, unknown> = {}) {
      records.push({ state, extra });
    },
    async checkSettlementGas() {
      calls.push('checkSettlementGas');
      return scenario.gas ? { broadcast: true, costUsdc: '1' } : { broadcast: false, reason: 'gas_price_unavailable' };
    },
    // The settlement child's activities over stand-in steps (the fast path runs all three in settlePayment).
    ...settlementStepActivities(
      {
        async verify(input: any) {
          calls.push('verify');
          if (scenario.settleRejects) {
            const response = {
              success: false,
              errorReason: scenario.settleRejects,
              transaction: '',
              network: input.network,
              payer: input.payer,
            };
            return { isValid: false, response };
          }
          return { isValid: true };
        },
        async submit() {
          calls.push('submitPayment');
          return { submitted: true, transaction: '0x' + '11'.repeat(32) };
        },
        async confirm(input: any) {
          return {
            success: true,
            transaction: '0x' + '11'.repeat(32),
            network: input.network,
            payer: input.paymentPayload.payload.authorization.from,
          };
        },
      },
      30_000,
    ),
    async ensureMerchantAllowance() {
      calls.push('ensureMerchantAllowance');
    },
    async submitDeposit() {
      calls.push('submitDeposit');
      return { submitted: true, hash: '0x' + '22'.repeat(32) };
    },
    async awaitDepositReceipt() {
      calls.push('awaitDepositReceipt');
      await scenario.depositHeld;
      return { status: scenario.depositReverts ? 'reverted' : 'success', hash: '0x' + '22'.repeat(32) };
    },
    async refundPayer() {
      calls.push('refundPayer');
      return { hash: '0x' + '33'.repeat(32) };
    },
  };

  beforeEach(() => {
    calls.length = 0;
    records.length = 0;
  });

  const input = (network: string): TopUpInput => {
    const nonce = `0x${randomBytes(32).toString('hex')}`;
    const payer = '0x' + '44'.repeat(20);
    return {
      workflowId: `topup:demo-merchant:${payer}:${nonce}`,
      merchant: 'demo-merchant',
      merchantContract: '0x' + '55'.repeat(20),
      buyer: payer,
      payer,
      network,
      nonce,
      grossAmount: '5000000',
      fee: '25000',
      bridgeFee: '0',
      netAmount: '4975000',
      relayer: '0x' + '66'.repeat(20),
      settle: {
        workflowId: `settle:${network}:${payer}:${nonce}`,
        organizationId: 'topup-gateway',
        apiKeyId: '',
        route: 'eip3009',
        network: network as any,
        payer,
        amount: '5000000',
        paymentPayload: {
          x402Version: 1,
          scheme: 'exact',
          network,
          payload: {
            signature: '0x00',
            authorization: { from: payer, to: payer, value: '5000000', validAfter: '0', validBefore: '9999999999', nonce },
          },
        },
        paymentRequirements: {} as any,
        payout: '0x' + '66'.repeat(20),
        fee: '25000',
        feeRecipient: '0x' + '77'.repeat(20),
      },
      createdAt: Date.now(),
    };
  };
  /** Runs the workflow to its end on a worker with the stand-in activities. */
  const run = (i: TopUpInput) =>
    t.withWorker(activities, (taskQueue) =>
      t.env.client.workflow.execute('topUpWorkflow', { workflowId: i.workflowId, taskQueue, args: [i] }),
    );

  test('ethereum without gas-price inputs: deferred, nothing settled, the workflow fails GasProtection', async () => {
    scenario = {};
    const err = await run(input('ethereum')).catch((e) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect((err as WorkflowFailedError).cause).toBeInstanceOf(ApplicationFailure);
    expect(((err as WorkflowFailedError).cause as ApplicationFailure).type).toBe('GasProtection');
    expect(calls).toEqual(['checkSettlementGas']);
    expect(records.map((r) => r.state)).toEqual(['settling', 'deferred']);
    expect(records[1].extra).toMatchObject({ errorReason: 'gas_price_unavailable' });
  });

  test('ethereum with a fee that covers gas passes the rule, then stops before settling: a same-chain input off Base is refused', async () => {
    scenario = { gas: true };
    expect(await run(input('ethereum'))).toEqual({ state: 'failed', errorReason: 'wrong_network' });
    expect(calls).toEqual(['checkSettlementGas']);
    expect(records.map((r) => r.state)).toEqual(['settling', 'failed']);
  });

  test('a deposit that reverts on chain after it was signed is refunded', async () => {
    scenario = { depositReverts: true };
    expect(await run(input('base'))).toEqual({ state: 'refunded', errorReason: 'deposit_failed' });
    expect(calls).toEqual(['verify', 'submitPayment', 'ensureMerchantAllowance', 'submitDeposit', 'awaitDepositReceipt', 'refundPayer']);
    expect(records.map((r) => r.state)).toEqual(['settling', 'depositing', 'refunding', 'refunded']);
    expect(records[3].extra).toEqual({
      settlementTx: '0x' + '11'.repeat(32),
      errorReason: 'deposit_failed',
      error: `deposit failed (deposit 0x${'22'.repeat(32)} reverted); the delivered amount was refunded to the payer`,
      refundTx: '0x' + '33'.repeat(32),
    });
  });

  test('a deposit unproven past parkAfterMs shows needs_review with the reason, refuses operator actions while in flight, then deposits once', async () => {
    let release!: () => void;
    scenario = { depositHeld: new Promise<void>((r) => (release = r)) };
    setTimeout(release, 90_000).unref(); // never keeps the worker from shutting down
    const i = { ...input('base'), parkAfterMs: 1_000 };
    await t.withWorker(activities, async (taskQueue) => {
      const handle = await t.env.client.workflow.start('topUpWorkflow', { workflowId: i.workflowId, taskQueue, args: [i] });
      const seen: string[] = [];
      for (const until = Date.now() + 30_000; Date.now() < until && seen.at(-1) !== 'needs_review';) {
        seen.push((await handle.describe()).typedSearchAttributes.get(X402State) as string);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(seen.at(-1)).toBe('needs_review');
      expect((await handle.describe()).memo?.[PARKED_MEMO]).toEqual({
        reason:
          'no proven outcome for the top-up deposit transaction within 1 s of its submission; the relayer keeps re-sending it and signs nothing new without proof',
        at: expect.any(String),
      });
      // The record keeps its state, and no refund can run beside the deposit in flight.
      expect(records.map((r) => r.state)).toEqual(['settling', 'depositing']);
      expect(await updateRefusal(handle.executeUpdate(refundTopUpUpdate, { args: [{ operator: 'ops', reason: 'try' }] }))).toBe(
        `top-up ${i.workflowId} is depositing: an operator action is taken only in needs_review`,
      );
      release();
      expect(await handle.result()).toEqual({ state: 'deposited' });
    });
    expect(calls).toEqual(['verify', 'submitPayment', 'ensureMerchantAllowance', 'submitDeposit', 'awaitDepositReceipt']);
    expect(records.map((r) => r.state)).toEqual(['settling', 'depositing', 'deposited']);
  });

  test('a settlement the child rejects ends failed with the mapped reason, nothing deposited', async () => {
    scenario = { settleRejects: 'invalid_exact_evm_payload_signature' };
    expect(await run(input('base'))).toEqual({ state: 'failed', errorReason: 'invalid_signature' });
    expect(calls).toEqual(['verify']);
    expect(records.map((r) => r.state)).toEqual(['settling', 'failed']);
  });
});
