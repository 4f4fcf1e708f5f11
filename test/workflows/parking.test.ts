import { randomBytes } from 'node:crypto';
import { X402State } from '../../src/temporal/search-attributes';
import type { RefundInput } from '../../src/inference/types';
import type { WithdrawalInput } from '../../src/gateway/withdrawal-types';
import { PARKED_MEMO } from '../../workflows/park';
import { refundWorkflow } from '../../workflows/refund';
import { withdrawalWorkflow } from '../../workflows/withdrawal';
import { useWorkflowTestEnv } from '../support/workflow-env';

/**
 * Parking beyond settlements (workflows/park.ts): a refund or withdrawal transaction whose outcome the
 * relayer cannot prove (its receipt wait never answers) moves the workflow to `needs_review` with the
 * reason in memo `parked`, while the one confirmation goes on; once proven, the workflow ends as usual
 * and nothing was sent twice.
 */
describe('parking of refunds and withdrawals (mocked activities)', () => {
  const t = useWorkflowTestEnv();
  const HASH = `0x${'22'.repeat(32)}`;
  const address = () => `0x${randomBytes(20).toString('hex')}`;

  /** Held receipt waits: every wait blocks until `release`, and counts itself. */
  const heldReceipts = () => {
    let release!: () => void;
    const proven = new Promise<void>((r) => (release = r));
    setTimeout(release, 90_000).unref(); // never keeps the worker from shutting down
    const waits = { n: 0 };
    const wait = async () => {
      waits.n++;
      await proven;
      return { status: 'success' as const };
    };
    return { release, waits, wait };
  };

  /** Polls the workflow's X402State until `state` (each observed state kept, asserted by the caller). */
  const statesUntil = async (handle: { describe(): Promise<any> }, state: string): Promise<string[]> => {
    const seen: string[] = [];
    for (const until = Date.now() + 30_000; Date.now() < until && seen.at(-1) !== state;) {
      seen.push((await handle.describe()).typedSearchAttributes.get(X402State));
      await new Promise((r) => setTimeout(r, 100));
    }
    return seen;
  };

  test('a refund unproven past parkAfterMs waits in needs_review with the reason, then ends refunded with one transfer', async () => {
    const held = heldReceipts();
    const sent: string[] = [];
    const outcomes: unknown[] = [];
    const activities = {
      markRefundPending: async () => undefined,
      claimStaleCharge: async () => true,
      chargeSettlement: async () => ({ settled: true }),
      sendRefund: async (i: RefundInput) => {
        sent.push(i.chargeId);
        return { hash: HASH };
      },
      awaitRefundReceipt: held.wait,
      recordRefundOutcome: async (o: unknown) => void outcomes.push(o),
    };
    await t.withWorker(activities, async (taskQueue) => {
      const chargeId = randomBytes(8).toString('hex');
      const input: RefundInput = {
        workflowId: `refund:${chargeId}`,
        chargeId,
        settlementId: `settle:base-sepolia:${address()}:0x${'01'.repeat(32)}`,
        network: 'base-sepolia',
        payer: address(),
        amount: '10000',
        asset: address(),
        revenueWallet: address(),
        reason: 'the provider failed',
        parkAfterMs: 1_000,
      };
      const handle = await t.env.client.workflow.start(refundWorkflow, { taskQueue, workflowId: input.workflowId, args: [input] });
      const seen = await statesUntil(handle, 'needs_review');
      expect(seen.at(-1)).toBe('needs_review');
      expect((await handle.describe()).memo?.[PARKED_MEMO]).toEqual({
        reason:
          'no proven outcome for the refund transaction within 1 s of its submission; the relayer keeps re-sending it and signs nothing new without proof',
        at: expect.any(String),
      });
      expect(outcomes).toEqual([]); // nothing recorded as an outcome while unproven

      held.release();
      expect(await handle.result()).toEqual({ state: 'refunded', refundTx: HASH });
      expect((await handle.describe()).typedSearchAttributes.get(X402State)).toBe('refunded');
      expect(sent).toEqual([chargeId]);
      expect(held.waits.n).toBe(1); // one confirmation throughout: parking started no other
      expect(outcomes).toEqual([{ chargeId, state: 'refunded', refundTx: HASH }]);
    });
  });

  test('a withdrawal step unproven past parkAfterMs shows needs_review with the reason, then withdraws once', async () => {
    const held = heldReceipts();
    const calls: string[] = [];
    const activities = {
      initiateGatewayWithdrawal: async () => (calls.push('initiate'), { submitted: true, hash: HASH }),
      withdrawFromGateway: async () => (calls.push('withdraw'), { submitted: true, hash: HASH }),
      readWithdrawalBlock: async () => ({ withdrawalBlock: '10', blockNumber: '10', withdrawalDelay: '0' }),
      awaitWithdrawalReceipt: async (a: { step: string }) => (a.step === 'initiate' ? held.wait() : { status: 'success' as const }),
      recordSettlement: async () => undefined,
    };
    await t.withWorker(activities, async (taskQueue) => {
      const input: WithdrawalInput = {
        workflowId: `withdraw:base-sepolia:${randomBytes(8).toString('hex')}`,
        organizationId: 'org',
        apiKeyId: 'key',
        network: 'base-sepolia',
        gatewayWallet: address(),
        token: address(),
        depositor: address(),
        amount: '1000000',
        pollMs: 100,
        parkAfterMs: 1_000,
      };
      const handle = await t.env.client.workflow.start(withdrawalWorkflow, { taskQueue, workflowId: input.workflowId, args: [input] });
      const seen = await statesUntil(handle, 'needs_review');
      expect(seen.at(-1)).toBe('needs_review');
      expect((await handle.describe()).memo?.[PARKED_MEMO]).toEqual({
        reason:
          "no proven outcome for the withdrawal's initiate transaction within 1 s of its submission; the relayer keeps re-sending it and signs nothing new without proof",
        at: expect.any(String),
      });
      expect(calls).toEqual(['initiate']);

      held.release();
      expect(await handle.result()).toMatchObject({ state: 'withdrawn', initiateTransaction: HASH, withdrawTransaction: HASH });
      expect(calls).toEqual(['initiate', 'withdraw']);
      expect(held.waits.n).toBe(1);
    });
  });
});
