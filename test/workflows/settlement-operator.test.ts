import { fastSettlementWorkflow, settlementWorkflow } from '../../workflows/settlement';
import { OPERATOR_ACTIONS_MEMO, rebroadcastUpdate, replaceUpdate } from '../../workflows/operator-actions';
import { X402State } from '../../src/temporal/search-attributes';
import { HASH, PAYER, input } from '../support/settlement-workflow-mocks';
import { updateRefusal, useWorkflowTestEnv } from '../support/workflow-env';

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
        const handle = await t.env.client.workflow.start(workflow, { taskQueue, workflowId: i.workflowId, args: [i] });
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
        const sol = await t.env.client.workflow.start(workflow, { taskQueue, workflowId: s.workflowId, args: [s] });
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
