import { SpanKind, trace } from '@opentelemetry/api';
import { Client, Connection } from '@temporalio/client';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Hex } from 'viem';
import { rpc } from '../../devnet/anvil';
import { waitUntil } from '../../devnet/process';
import { RelayerTransaction } from '../../src/db/entities';
import { startTracing, temporalClientInterceptors, type Tracing } from '../../src/observability/tracing';
import { REQUEST_ID_ATTRIBUTE, WORKFLOW_ID_ATTRIBUTE } from '../../src/observability/trace-attributes';
import { settleWorkflowId } from '../../src/temporal/workflow-ids';
import { TEST_ACCOUNTS } from '../support/accounts';
import { startSettleHarness, type SettleHarness } from '../support/settle-harness';
import { fromReadable, startOtlpReceiver, type SeenSpan } from '../support/spans';
import { readStackInfo } from '../support/stack-info';

/**
 * One request, one trace (docs/decisions/one-request-one-trace.md): one POST /v1/settle on the real stack. The API runs
 * in this process with an in-memory exporter; the worker is a real process exporting over OTLP/HTTP
 * to a receiver here, as it would to a collector. The spans of both form one tree in one trace.
 */
describe('tracing: one settle is one trace from the HTTP request to each RPC call', () => {
  let h: SettleHarness;
  let tracing: Tracing;
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  const memory = new InMemorySpanExporter();
  const buyer = TEST_ACCOUNTS.buyers[2];

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    tracing = startTracing('api', { spanProcessor: new SimpleSpanProcessor(memory) })!;
    const connection = await Connection.connect({ address: readStackInfo().temporalAddress });
    h = await startSettleHarness('sqlite', {
      relayerIndex: 2,
      temporal: new Client({ connection, interceptors: temporalClientInterceptors() }),
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_BSP_SCHEDULE_DELAY: '50', // the batch processor's default is 5 s
        WORKFLOW_BUNDLE_PATH: '', // a traced worker bundles the tracing interceptors itself
      },
    });
  });
  afterAll(async () => {
    await rpc(readStackInfo().chains['base-sepolia'].rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
    await h?.close();
    await tracing?.shutdown();
    trace.disable();
    await receiver?.close();
  });

  test('HTTP server → StartWorkflow → RunWorkflow → StartActivity → RunActivity → RPC, with request and workflow ids', async () => {
    const body = await h.pay(buyer, { value: 1_000_000n });
    const auth = body.paymentPayload.payload.authorization;
    const workflowId = settleWorkflowId('base-sepolia', auth.from, auth.nonce as Hex);
    const requestId = `trace-${auth.nonce.slice(2, 18)}`;
    const payoutBefore = await h.balanceOf(h.payout);

    const res = await h.settle(body, { 'x-request-id': requestId });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(await h.balanceOf(h.payout)).toBe(payoutBefore + 1_000_000n);

    const api = memory.getFinishedSpans().map(fromReadable);
    const server = api.find((s) => s.name === 'POST /v1/settle')!;
    expect(server).toBeDefined();
    const inTrace = (spans: SeenSpan[]) => spans.filter((s) => s.traceId === server.traceId);
    // The worker's batch processor exports shortly after the workflow ends.
    const worker = await waitUntil(
      'the worker to export the workflow and its last RPC call',
      async () => {
        const spans = inTrace(receiver.spans);
        return spans.some((s) => s.name === 'RunWorkflow:fastSettlementWorkflow') &&
          spans.some((s) => s.name === 'RunActivity:settlePayment')
          ? spans
          : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    const all = [...inTrace(api), ...worker];
    const one = (name: string, parent: SeenSpan) => {
      const found = all.filter((s) => s.name === name);
      expect(found.map((s) => s.name)).toEqual([name]);
      expect(found[0].parentSpanId).toBe(parent.spanId);
      return found[0];
    };
    const ids = (s: SeenSpan) => [s.attributes[REQUEST_ID_ATTRIBUTE], s.attributes[WORKFLOW_ID_ATTRIBUTE]];

    // The API: the request span is the root (the caller sent no traceparent), the start its child.
    expect(server.parentSpanId).toBeUndefined();
    expect(server).toMatchObject({ service: 'x402-api', kind: SpanKind.SERVER });
    expect(server.attributes).toMatchObject({
      [REQUEST_ID_ATTRIBUTE]: requestId,
      'http.route': '/v1/settle',
      'http.request.method': 'POST',
      'http.response.status_code': 200,
    });
    const start = one('StartWorkflow:fastSettlementWorkflow', server);
    expect(start.service).toBe('x402-api');
    expect(ids(start)).toEqual([requestId, workflowId]);

    // The worker: the run under the start, the fast path's local activity start under the run, its execution under its start.
    const run = one('RunWorkflow:fastSettlementWorkflow', start);
    expect(run.service).toBe('x402-worker');
    expect(ids(run)).toEqual([requestId, workflowId]);
    const scheduled = one('StartActivity:settlePayment', run);
    const settling = one('RunActivity:settlePayment', scheduled);
    expect(ids(scheduled)).toEqual([requestId, workflowId]);
    expect(ids(settling)).toEqual([requestId, workflowId]);
    expect(all.filter((s) => /Activity:(verify|submit|confirm)Payment$/.test(s.name))).toEqual([]);

    // Each JSON-RPC request is a CLIENT span of the activity that made it; the transaction is sent by settlePayment.
    const rpc = all.filter((s) => s.attributes['rpc.system'] === 'jsonrpc');
    const sent = rpc.filter((s) => s.name === 'eth_sendRawTransaction');
    expect(sent).toHaveLength(1);
    expect(sent[0].parentSpanId).toBe(settling.spanId);
    expect(sent[0]).toMatchObject({ service: 'x402-worker', kind: SpanKind.CLIENT });
    expect(sent[0].attributes).toMatchObject({
      'rpc.method': 'eth_sendRawTransaction',
      'x402.network': 'base-sepolia',
      'server.address': '127.0.0.1',
      [REQUEST_ID_ATTRIBUTE]: requestId,
      [WORKFLOW_ID_ATTRIBUTE]: workflowId,
    });
    const receipts = rpc.filter((s) => s.name === 'eth_getTransactionReceipt');
    expect(receipts.length).toBeGreaterThan(0);
    for (const s of rpc) {
      expect(s.parentSpanId).toBe(settling.spanId);
      expect(ids(s)).toEqual([requestId, workflowId]);
    }
    // Nothing of this request left its trace.
    const outside = [...api, ...receiver.spans].filter(
      (s) => s.traceId !== server.traceId && s.attributes[REQUEST_ID_ATTRIBUTE] === requestId,
    );
    expect(outside).toEqual([]);
  });
  test('a traced worker SIGKILLed after broadcasting: one transaction, and the new worker continues the same trace', async () => {
    const rpcUrl = h.stack.chains['base-sepolia'].rpcUrl;
    const relayer = TEST_ACCOUNTS.relayers[2];
    const body = await h.pay(buyer, { value: 2_000_000n });
    const auth = body.paymentPayload.payload.authorization;
    const workflowId = settleWorkflowId('base-sepolia', auth.from, auth.nonce as Hex);
    const requestId = `trace-kill-${auth.nonce.slice(2, 18)}`;
    const [buyerBefore, relayerNonceBefore] = await Promise.all([
      h.balanceOf(buyer.address),
      h.chain.getTransactionCount({ address: relayer.address }),
    ]);

    await rpc(rpcUrl, 'evm_setAutomine', [false]);
    const first = h.settle(body, { 'x-request-id': requestId });
    // The transaction is recorded, then in the node's mempool: the worker dies before any receipt.
    const hash = await waitUntil(
      'the settlement transaction in the mempool',
      async () => {
        const [row] = await h.tdb.db.em.fork().find(RelayerTransaction, { id: { $like: `${workflowId}%` } });
        return row?.hash && (await h.chain.getTransaction({ hash: row.hash as Hex }).catch(() => undefined))
          ? (row.hash as Hex)
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    await h.restartWorker({ kill: true });
    await rpc(rpcUrl, 'evm_mine', []);
    await rpc(rpcUrl, 'evm_setAutomine', [true]);
    expect([200, 202]).toContain((await first).status);
    const final = await h.settleUntilFinal(body);
    expect(final.status).toBe(200);
    expect(final.body).toEqual({ success: true, transaction: hash, network: 'base-sepolia', payer: buyer.address });
    expect(await h.settledEvents(buyer.address, auth.nonce as Hex)).toBe(1);
    expect(await h.balanceOf(buyer.address)).toBe(buyerBefore - 2_000_000n);
    expect(await h.chain.getTransactionCount({ address: relayer.address })).toBe(relayerNonceBefore + 1);

    // The new worker's run (its parent context comes from the start's headers in history) is in the first request's trace.
    const server = memory
      .getFinishedSpans()
      .map(fromReadable)
      .find((s) => s.attributes[REQUEST_ID_ATTRIBUTE] === requestId && s.name === 'POST /v1/settle')!;
    const start = memory
      .getFinishedSpans()
      .map(fromReadable)
      .find((s) => s.name === 'StartWorkflow:fastSettlementWorkflow' && s.parentSpanId === server.spanId)!;
    expect(start.attributes[WORKFLOW_ID_ATTRIBUTE]).toBe(workflowId);
    const spans = await waitUntil(
      'the new worker to export the finished run',
      async () => {
        const inTrace = receiver.spans.filter((s) => s.traceId === server.traceId);
        return inTrace.some((s) => s.name === 'RunWorkflow:fastSettlementWorkflow') ? inTrace : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    const runs = spans.filter((s) => s.name === 'RunWorkflow:fastSettlementWorkflow');
    expect(runs).toHaveLength(1); // the killed worker's run never ended
    expect(runs[0].parentSpanId).toBe(start.spanId);
    // The new worker runs the fast path again (its first result never reached history): it finds the
    // transaction recorded and confirms it.
    const confirms = spans.filter((s) => s.name === 'RunActivity:settlePayment');
    expect(confirms.length).toBeGreaterThan(0);
    for (const c of confirms) {
      const scheduled = spans.find((s) => s.spanId === c.parentSpanId)!;
      expect(scheduled.name).toBe('StartActivity:settlePayment');
      expect(scheduled.parentSpanId).toBe(runs[0].spanId);
      expect([c.attributes[REQUEST_ID_ATTRIBUTE], c.attributes[WORKFLOW_ID_ATTRIBUTE]]).toEqual([requestId, workflowId]);
    }
  });
});
