import { fastSettlementWorkflow, settlementWorkflow } from '../../workflows/settlement';
import { PARKED_MEMO } from '../../workflows/park';
import { OPERATOR_ACTIONS_MEMO, rebroadcastUpdate, replaceUpdate } from '../../workflows/operator-actions';
import { X402State } from '../../src/temporal/search-attributes';
import { HASH, PAYER, input } from '../support/settlement-workflow-mocks';
import { HELD_LOCAL_ACTIVITY, updateRefusal, useWorkflowTestEnv } from '../support/workflow-env';

/**
 * Operator nudges of a settlement whose transaction is out but not mined (rebroadcast / replace),
 * against mocked activities: accepted only in `submitted`, with an operator and a reason; each runs
 * the nudge activity once with who and why; the confirmation goes on meanwhile. On both types the
 * worker runs: the API's `fastSettlementWorkflow` and the children's `settlementWorkflow`.
 */
const who = { operator: 'carol', reason: 'stuck behind a low fee' };

describe.each([{ workflow: fastSettlementWorkflow }, { workflow: settlementWorkflow }])(
  '$workflow.name operator nudges (mocked activities)',
  ({ workflow }) => {
    const t = useWorkflowTestEnv();
    let n = 0;

    test('submitted: refused without a reason, then rebroadcast and replace each run once with who and why; refused once settled', async () => {
      let release!: () => void;
      const mined = new Promise<void>((r) => (release = r));
      const nudges: unknown[][] = [];
      const activities = {
        // The fast path's wait ran out: the transaction is out, not mined; confirmPayment waits on.
        settlePayment: async () => ({ state: 'submitted', transaction: HASH }),
        confirmPayment: async () => {
          await mined;
          return { success: true, transaction: HASH, network: 'base-sepolia', payer: PAYER };
        },
        recordSettlement: async () => undefined,
        nudgeSettlementTransaction: async (...args: unknown[]) => {
          nudges.push(args);
          return { hash: HASH, status: 'signed' };
        },
      };
      await t.withWorker(activities, async (taskQueue) => {
        const i = input(++n);
        const handle = await t.env.client.workflow.start(workflow, {
          ...HELD_LOCAL_ACTIVITY,
          taskQueue,
          workflowId: i.workflowId,
          args: [i],
        });
        for (let k = 0; k < 100 && (await handle.describe()).typedSearchAttributes.get(X402State) !== 'submitted'; k++)
          await new Promise((r) => setTimeout(r, 100));

        expect(await updateRefusal(handle.executeUpdate(rebroadcastUpdate, { args: [{ operator: 'carol', reason: '' }] }))).toMatch(
          /non-empty operator and reason/,
        );
        expect(nudges).toEqual([]);
        expect(await handle.executeUpdate(rebroadcastUpdate, { args: [who] })).toEqual({ hash: HASH, status: 'signed' });
        expect(await handle.executeUpdate(replaceUpdate, { args: [{ ...who, reason: 'still stuck' }] })).toEqual({
          hash: HASH,
          status: 'signed',
        });
        expect(nudges).toEqual([
          [i, 'rebroadcast', who],
          [i, 'replace', { ...who, reason: 'still stuck' }],
        ]);
        expect((await handle.describe()).memo?.[OPERATOR_ACTIONS_MEMO]).toEqual([
          { action: 'rebroadcast', ...who, at: expect.any(String) },
          { action: 'replace', ...who, reason: 'still stuck', at: expect.any(String) },
        ]);

        release();
        expect((await handle.result()).response.success).toBe(true);
        await expect(handle.executeUpdate(rebroadcastUpdate, { args: [who] })).rejects.toThrow();
        expect(nudges).toHaveLength(2);
      });
    });

    test('on Solana a nudge is refused by the validator (the relayer does not send Solana transactions)', async () => {
      let hold!: () => void;
      const held = new Promise<void>((r) => (hold = r));
      const activities = {
        settlePayment: async () => ({ state: 'submitted', transaction: HASH }),
        confirmPayment: async () => {
          await held;
          return { success: true, transaction: HASH, network: 'solana-devnet', payer: PAYER };
        },
        recordSettlement: async () => undefined,
        nudgeSettlementTransaction: async () => {
          throw new Error('must not run');
        },
      };
      await t.withWorker(activities, async (taskQueue) => {
        const s = input(++n, 'solana-devnet');
        const sol = await t.env.client.workflow.start(workflow, { ...HELD_LOCAL_ACTIVITY, taskQueue, workflowId: s.workflowId, args: [s] });
        for (let k = 0; k < 100 && (await sol.describe()).typedSearchAttributes.get(X402State) !== 'submitted'; k++)
          await new Promise((r) => setTimeout(r, 100));
        expect(await updateRefusal(sol.executeUpdate(rebroadcastUpdate, { args: [who] }))).toBe(
          'a Solana transaction is not re-sent by the relayer',
        );
        hold();
        await sol.result();
      });
    });
  },
);

/** Parking runs in the skeleton both types share (`settle`): shown once, on the type the API starts. */
describe('fastSettlementWorkflow parking (mocked activities)', () => {
  const t = useWorkflowTestEnv();
  let n = 1000;
  const workflow = fastSettlementWorkflow;

  test('a transaction unproven past parkAfterMs: the settlement waits in needs_review with the reason, takes a nudge there, and settles once proven', async () => {
    let release!: () => void;
    const proven = new Promise<void>((r) => (release = r));
    let confirms = 0;
    const nudges: unknown[][] = [];
    const activities = {
      settlePayment: async () => ({ state: 'submitted', transaction: HASH }),
      // The relayer cannot prove an outcome (receipt lookups failing): confirmation goes on, unanswered.
      confirmPayment: async () => {
        confirms++;
        await proven;
        return { success: true, transaction: HASH, network: 'base-sepolia', payer: PAYER };
      },
      recordSettlement: async () => undefined,
      nudgeSettlementTransaction: async (...args: unknown[]) => {
        nudges.push(args);
        return { hash: HASH, status: 'signed' };
      },
    };
    await t.withWorker(activities, async (taskQueue) => {
      // The held confirmation is let go whatever happens, so a failure cannot keep the worker from shutting down.
      setTimeout(release, 90_000).unref();
      const i = { ...input(++n), parkAfterMs: 1_500 };
      const handle = await t.env.client.workflow.start(workflow, {
        ...HELD_LOCAL_ACTIVITY,
        taskQueue,
        workflowId: i.workflowId,
        args: [i],
      });
      const states: (string | undefined)[] = [];
      // A timer set while a local activity runs reaches the server with the task's heartbeat (HELD_LOCAL_ACTIVITY).
      for (const until = Date.now() + 60_000; Date.now() < until && states.at(-1) !== 'needs_review';) {
        states.push((await handle.describe()).typedSearchAttributes.get(X402State));
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(states.at(-1)).toBe('needs_review');
      expect(states).toContain('submitted'); // it waited in submitted first
      expect((await handle.describe()).memo?.[PARKED_MEMO]).toEqual({
        reason:
          'no proven outcome for the settlement transaction within 2 s of its submission; the relayer keeps re-sending it and signs nothing new without proof',
        at: expect.any(String),
      });
      expect(await handle.executeUpdate(replaceUpdate, { args: [who] })).toEqual({ hash: HASH, status: 'signed' });
      expect(nudges).toEqual([[i, 'replace', who]]);

      release();
      expect((await handle.result()).response).toEqual({ success: true, transaction: HASH, network: 'base-sepolia', payer: PAYER });
      expect((await handle.describe()).typedSearchAttributes.get(X402State)).toBe('settled');
      expect(confirms).toBe(1); // one confirmation throughout: parking never started another
    });
  });
});
