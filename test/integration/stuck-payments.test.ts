import type { Hex } from 'viem';
import { formatEther } from 'viem';
import { rpc } from '../../devnet/anvil';
import { waitUntil } from '../../devnet/process';
import { buildNetworkTable } from '../../src/chains/networks';
import { RelayerTransaction } from '../../src/db/entities';
import { X402State, X402Stuck } from '../../src/temporal/search-attributes';
import { stuckScanScheduleId } from '../../src/temporal/stuck-scan';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { TEST_ACCOUNTS } from '../support/accounts';
import { oneDbKind } from '../support/db';
import { request, startApi } from '../support/http';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { patchIds } from '../support/history-events';

/**
 * Operators find stuck payments (README "For operators"), on the real stack: a settlement held in
 * `submitted` (the chain does not mine) past STUCK_AFTER_SECONDS is counted by the scheduled scan,
 * carries X402Stuck=true, and shows in x402_stuck_payments; the worker is then SIGKILLed and the
 * payment still settles exactly once, after which the mark and the count are gone. /healthz checks
 * every enabled network and names the one whose RPC is dead.
 */

/** The value of one exact series of the Prometheus text, or undefined when it is absent. */
function series(text: string, name: string, labels: Record<string, string>): number | undefined {
  const want = `${name}{${Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',')}} `;
  const line = text.split('\n').find((l) => l.startsWith(want));
  return line === undefined ? undefined : Number(line.slice(want.length));
}

describe.each(oneDbKind('sqlite'))('stuck payments and health (%s)', (kind) => {
  let h: SettleHarness;
  const buyer = TEST_ACCOUNTS.buyers[3];
  const relayer = TEST_ACCOUNTS.relayers[2];
  let rpcUrl: string;
  const scrape = async (base = h.api.baseUrl) => {
    const res = await request('GET', `${base}/metrics`);
    expect(res.status).toBe(200);
    return res.body as string;
  };
  const stuckSeries = { kind: 'settle', state: 'submitted', network: 'base-sepolia' };

  beforeAll(async () => {
    h = await startSettleHarness(kind, {
      relayerIndex: 2,
      // The paused chain holds the transaction longer than the relayer's default replacement delay:
      // keep the first transaction, so the final answer carries the hash the pending one did.
      env: { SETTLE_WAIT_MS: '1500', RECEIPT_WAIT_MS: '3000', STUCK_AFTER_SECONDS: '1', RELAYER_REPLACE_AFTER_MS: '600000' },
    });
    rpcUrl = h.stack.chains['base-sepolia'].rpcUrl;
  });
  afterAll(async () => {
    await rpc(rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
    await h?.close();
  });

  test('a settlement held in submitted is counted, flagged X402Stuck=true, survives a worker kill and settles once', async () => {
    const taskQueue = h.env.TEMPORAL_TASK_QUEUE!;
    const schedule = h.temporal.schedule.getHandle(stuckScanScheduleId(taskQueue));
    // The worker created the schedule at start: every minute, the scan workflow on its task queue.
    const described = await schedule.describe();
    expect(described.spec.intervals).toEqual([{ every: 60_000, offset: undefined }]);
    expect(described.action).toMatchObject({ type: 'startWorkflow', workflowType: 'stuckScanWorkflow', taskQueue });
    // The scans here are the test's own (`trigger` runs a paused schedule's action): a minute boundary
    // during the test would otherwise scan before "nothing is counted before a scan ran" is asserted.
    await schedule.pause('stuck-payments test: scans triggered by the test');

    const body = await h.pay(buyer, { value: 2_000_000n });
    const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
    const workflowId = settleWorkflowId('base-sepolia', buyer.address, nonce);
    const buyerBefore = await h.balanceOf(buyer.address);
    const payoutBefore = await h.balanceOf(h.payout);
    const relayerNonceBefore = await h.chain.getTransactionCount({ address: relayer.address });

    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    const pending = await h.settleUntilBroadcast(body);
    const hash = pending.body.transaction as Hex;
    const handle = h.temporal.workflow.getHandle(workflowId);
    await waitUntil(
      'the settlement to show X402State=submitted',
      async () => (await handle.describe()).typedSearchAttributes.get(X402State) === 'submitted',
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    // Nothing is counted before a scan ran.
    expect(series(await scrape(), 'x402_stuck_payments', stuckSeries)).toBeUndefined();

    await schedule.trigger();
    const text = await waitUntil(
      'the scan to count the settlement',
      async () => {
        const t = await scrape();
        return series(t, 'x402_stuck_payments', stuckSeries) !== undefined && t;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    const lines = text.split('\n').filter((l) => l.startsWith('x402_stuck_payments{'));
    expect(lines).toEqual(['x402_stuck_payments{kind="settle",state="submitted",network="base-sepolia"} 1']);

    const flagged = async () => {
      const ids: string[] = [];
      for await (const wf of h.temporal.workflow.list({ query: `X402Stuck=true AND TaskQueue="${taskQueue}"` })) ids.push(wf.workflowId);
      return ids;
    };
    expect(
      await waitUntil('X402Stuck=true in visibility', async () => (await flagged()).length > 0 && flagged(), { timeoutMs: 60_000 }),
    ).toEqual([workflowId]);
    expect((await handle.describe()).typedSearchAttributes.get(X402Stuck)).toBe(true);
    // The history the new worker must replay: the signal, the patch marker and the upsert it made.
    const history = (await handle.fetchHistory()).events ?? [];
    // The minute's own run may signal too before the first mark is visible: one marker, one mark all the same.
    const signals = history.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'markStuck').length;
    expect(signals).toBeGreaterThanOrEqual(1);
    // One marker per patch this run took: parking's, taken when it waited past the fast path, and the
    // stuck mark's (the API's fastSettlementWorkflow has no other patch of its own).
    expect(patchIds(history)).toEqual(['park-unproven-v1', 'x402-mark-stuck']);
    const stuckUpserts = history.filter((e) => e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.X402Stuck);
    expect(stuckUpserts).toHaveLength(1);

    // The worker dies while the payment is flagged; a new one replays the history (signal, patch
    // marker, upsert) and finishes the same transaction.
    await h.restartWorker({ kill: true });
    await rpc(rpcUrl, 'evm_mine', []);
    await rpc(rpcUrl, 'evm_setAutomine', [true]);
    const final = await h.settleUntilFinal(body);
    expect(final.status).toBe(200);
    expect(final.body).toEqual({ success: true, transaction: hash, network: 'base-sepolia', payer: buyer.address });
    expect(await h.settledEvents(buyer.address, nonce)).toBe(1);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - 2_000_000n);
    expect(await h.balanceOf(h.payout)).toBe(payoutBefore + 2_000_000n);
    expect(await h.chain.getTransactionCount({ address: relayer.address })).toBe(relayerNonceBefore + 1);
    const recorded = await h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `${workflowId}%` } });
    expect(recorded.map((r) => ({ hash: r.hash, status: r.status }))).toEqual([{ hash, status: 'mined' }]);

    // Settled: the move removed the mark, and the next scan counts nothing.
    const after = await handle.describe();
    expect(after.typedSearchAttributes.get(X402State)).toBe('settled');
    expect(after.typedSearchAttributes.get(X402Stuck)).toBeUndefined();
    await schedule.trigger();
    await waitUntil(
      'the next scan to clear the count',
      async () => series(await scrape(), 'x402_stuck_payments', stuckSeries) === undefined,
      {
        timeoutMs: 60_000,
        intervalMs: 250,
      },
    );
    expect(await flagged()).toEqual([]);
  });

  test('GET /healthz lists every enabled network with the relayer gas; x402_relayer_balance_ether reads it', async () => {
    // An API of its own: the harness's caches the balance it read during the test above (10 s).
    const fresh = await startApi({
      db: h.tdb.db,
      config: h.tdb.config,
      temporal: h.temporal,
      networks: buildNetworkTable(h.tdb.config.env),
    });
    const res = await request('GET', `${fresh.baseUrl}/healthz`);
    expect(res.status).toBe(200);
    const address = h.tdb.config.RELAYER_ADDRESS!;
    const balance = formatEther(await h.chain.getBalance({ address: address as Hex }));
    const evm = (chainId: number) => ({
      ok: true,
      ms: expect.any(Number),
      chainId,
      blockNumber: expect.any(Number),
      relayer: { address, balanceEther: expect.stringMatching(/^\d/), minBalanceEther: '0.01', ok: true },
    });
    expect(res.body).toEqual({
      status: 'ok',
      checks: {
        temporal: { ok: true, ms: expect.any(Number) },
        database: { ok: true, ms: expect.any(Number) },
        networks: {
          'base-sepolia': evm(84532),
          'optimism-sepolia': evm(11155420),
          'solana-devnet': { ok: true, ms: expect.any(Number), slot: expect.any(Number) },
        },
      },
    });
    expect(res.body.checks.networks['base-sepolia'].relayer.balanceEther).toBe(balance);
    expect(
      series(await scrape(fresh.baseUrl), 'x402_relayer_balance_ether', { network: 'base-sepolia', address: address.toLowerCase() }),
    ).toBe(Number(balance));
    await fresh.close();
  });

  test('a dead RPC: 503 naming the network, counted in x402_rpc_errors_total; a relayer below the floor is low_balance', async () => {
    const env = { ...h.tdb.config.env, RPC_URLS_OPTIMISM_SEPOLIA: 'http://127.0.0.1:1' };
    const dead = await startApi({ db: h.tdb.db, config: { ...h.tdb.config, env }, temporal: h.temporal, networks: buildNetworkTable(env) });
    try {
      const res = await request('GET', `${dead.baseUrl}/healthz`);
      expect(res.status).toBe(503);
      expect(res.body.status).toBe('degraded');
      expect(res.body.checks.networks['optimism-sepolia']).toEqual({ ok: false, ms: expect.any(Number), error: expect.any(String) });
      expect(res.body.checks.networks['base-sepolia'].ok).toBe(true);
      expect(res.body.checks.temporal.ok).toBe(true);
      // The first scrape reads the balance and the nonces (and fails); the second serves them from the cache.
      await scrape(dead.baseUrl);
      const text = await scrape(dead.baseUrl);
      expect(series(text, 'x402_rpc_errors_total', { network: 'optimism-sepolia' })).toBe(3); // /healthz + one balance and one nonce read
      expect(series(text, 'x402_rpc_errors_total', { network: 'base-sepolia' })).toBeUndefined();
      const address = h.tdb.config.RELAYER_ADDRESS!.toLowerCase();
      expect(series(text, 'x402_relayer_balance_ether', { network: 'optimism-sepolia', address })).toBeUndefined();
      expect(series(text, 'x402_relayer_nonce', { network: 'optimism-sepolia', address, kind: 'latest' })).toBeUndefined();
      expect(series(text, 'x402_relayer_nonce', { network: 'base-sepolia', address, kind: 'latest' })).toBeGreaterThanOrEqual(0);
      expect(series(text, 'x402_relayer_balance_ether', { network: 'base-sepolia', address })).toBeGreaterThan(0);
    } finally {
      await dead.close();
    }

    const rich = await startApi({
      db: h.tdb.db,
      config: { ...h.tdb.config, RELAYER_MIN_BALANCE_ETHER: '100000000' },
      temporal: h.temporal,
    });
    try {
      const res = await request('GET', `${rich.baseUrl}/healthz`);
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('low_balance');
      expect(res.body.checks.networks['base-sepolia'].relayer).toMatchObject({ ok: false, minBalanceEther: '100000000' });
    } finally {
      await rich.close();
    }
  });
});
