import { randomBytes } from 'node:crypto';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { waitUntil } from '../../devnet/process';
import { RelayerTransaction } from '../../src/db/entities';
import { generatePayloadCodecKey } from '../../src/temporal/codec-keys';
import { TEST_ACCOUNTS } from '../support/accounts';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';

/**
 * Issue 39, "forged workflows still move money": whoever reaches Temporal without the payload codec
 * key (the UI's write actions, the CLI, a shared cluster) starts a money workflow with plain JSON
 * input. Our worker, which holds the key, refuses to decode it: the workflow task fails before any
 * workflow code runs, no activity is scheduled, nothing is signed and no funds move. The same input
 * sealed with the key does reach the workflow (it schedules its first activity), so the check below
 * would see a forged workflow that ran.
 */

jest.setTimeout(180_000);

type Event = temporal.api.history.v1.IHistoryEvent;

describe('a workflow started without the payload codec key moves nothing (sqlite)', () => {
  let h: SettleHarness;
  let plain: Client;
  const buyer = TEST_ACCOUNTS.buyers[4];
  const thief = privateKeyToAccount(generatePrivateKey()).address;
  const revenue = TEST_ACCOUNTS.relayers[3].address; // the devnet revenue wallet is the relayer

  beforeAll(async () => {
    h = await startSettleHarness('sqlite', { relayerIndex: 3, env: { PAYLOAD_CODEC_KEYS: generatePayloadCodecKey('test-1') } });
    plain = new Client({ connection: await Connection.connect({ address: h.stack.temporalAddress }) });
  });
  afterAll(async () => {
    await plain?.connection.close();
    await h?.close();
  });

  const taskQueue = () => h.env.TEMPORAL_TASK_QUEUE;
  const events = async (handle: WorkflowHandle): Promise<Event[]> => (await handle.fetchHistory()).events ?? [];
  const scheduled = (es: Event[]) =>
    es.filter((e) => e.activityTaskScheduledEventAttributes).map((e) => e.activityTaskScheduledEventAttributes!.activityType!.name);

  /** A refund of 10^6 USDC to a foreign payee, as a forger would write it. */
  const forgedRefund = (tag: string) => {
    const id = `forged-${tag}-${randomBytes(4).toString('hex')}`;
    return {
      workflowId: `refund:${id}`,
      chargeId: id,
      settlementId: `settle:${id}`,
      network: 'base-sepolia' as const,
      payer: thief,
      amount: '1000000000000',
      asset: h.stack.usdc,
      revenueWallet: revenue,
      reason: 'forged',
    };
  };

  test('the API path (sealed) still settles: the worker holds the same key', async () => {
    const res = await h.settleUntilFinal(await h.pay(buyer, { value: 1_000n }));
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
  });

  test('every money workflow forged with plain payloads (refund, settlements, permit, bridge, top-up, withdrawal, batched, media): the workflow task fails to decode, no activity runs, nothing moves', async () => {
    const [thiefBefore, revenueBefore] = await Promise.all([h.balanceOf(thief), h.balanceOf(revenue)]);
    const refund = forgedRefund('refund');
    const forged: [string, unknown, string][] = [
      ['refundWorkflow', refund, refund.workflowId],
      // Every other workflow that moves money, with inputs a forger would guess at: the decode fails
      // before the workflow reads any of them.
      ...[
        'fastSettlementWorkflow',
        'settlementWorkflow',
        'permitWorkflow',
        'crossChainSettlementWorkflow',
        'bridgeTransferWorkflow',
        'topUpWorkflow',
        'withdrawalWorkflow',
        'batchedSettlementWorkflow',
        'mediaJobWorkflow',
      ].map((type): [string, unknown, string] => [
        type,
        {
          network: 'base-sepolia',
          payer: thief,
          payTo: thief,
          recipient: thief,
          depositor: revenue,
          amount: '1000000000000',
          price: '1000000000000',
        },
        `forged-${type}-${randomBytes(4).toString('hex')}`,
      ]),
    ];
    const handles = await Promise.all(
      forged.map(([type, input, workflowId]) => plain.workflow.start(type, { workflowId, taskQueue: taskQueue(), args: [input] })),
    );
    try {
      for (const handle of handles) {
        const history = await waitUntil(
          `a failed workflow task of ${handle.workflowId}`,
          async () => {
            const es = await events(handle);
            return es.some((e) => e.workflowTaskFailedEventAttributes) ? es : undefined;
          },
          { timeoutMs: 30_000, intervalMs: 200 },
        );
        const failure = history.find((e) => e.workflowTaskFailedEventAttributes)!.workflowTaskFailedEventAttributes!.failure!;
        expect(failure.message).toMatch(/payload codec: refused a payload not encrypted with our key/);
        expect(scheduled(history)).toEqual([]);
        expect((await handle.describe()).status.name).toBe('RUNNING'); // retried, never progressing
      }
    } finally {
      await Promise.all(handles.map((hd) => hd.terminate('test: forged workflow').catch(() => undefined)));
    }
    // Terminated after the checks: still no activity in any history, no transaction, no funds moved.
    for (const handle of handles) expect(scheduled(await events(handle))).toEqual([]);
    const rows = await h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `%forged-%` } });
    expect(rows).toEqual([]);
    expect(await h.balanceOf(thief)).toBe(thiefBefore);
    expect(await h.balanceOf(revenue)).toBe(revenueBefore);
  });

  test('control: the same forged refund sealed with the key reaches the workflow (it schedules its first ledger activity)', async () => {
    const refund = forgedRefund('sealed');
    const handle = await h.temporal.workflow.start('refundWorkflow', {
      workflowId: refund.workflowId,
      taskQueue: taskQueue(),
      args: [refund],
    });
    try {
      const history = await waitUntil(
        'the refund workflow schedules an activity',
        async () => {
          const es = await events(handle);
          return scheduled(es).length ? es : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      expect(scheduled(history)[0]).toBe('markRefundPending');
      expect(history.some((e) => e.workflowTaskFailedEventAttributes)).toBe(false);
    } finally {
      await handle.terminate('test: control').catch(() => undefined);
    }
  });
});
