import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import Router from '@koa/router';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { createPublicClient } from 'viem';
import { tracedHttp } from '../../src/chains/evm/rpc-spans';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import pino from 'pino';
import type { HttpState } from '../../src/http/context';
import { requestId } from '../../src/http/request-id';
import { REQUEST_ID_ATTRIBUTE, WORKFLOW_ID_ATTRIBUTE } from '../../src/observability/trace-attributes';
import { httpServerSpans, startTracing, temporalClientInterceptors, tracing, workerTracing } from '../../src/observability/tracing';

/** src/observability/tracing.ts without a stack: off by default, and the HTTP span's rules when on. */

async function serve(app: Koa<HttpState>): Promise<{ url: string; server: Server }> {
  const server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

function appWithSpans(): Koa<HttpState> {
  const app = new Koa<HttpState>();
  app.use(requestId(pino({ level: 'silent' })));
  app.use(httpServerSpans());
  const router = new Router<HttpState>();
  router.get('/v1/things/:id', (ctx) => {
    ctx.body = { traced: trace.getActiveSpan()?.isRecording() ?? false };
  });
  app.use(router.routes());
  return app;
}

describe('tracing', () => {
  const memory = new InMemorySpanExporter();
  afterAll(async () => {
    await tracing()?.shutdown();
    trace.disable();
  });

  test('off without an endpoint: no provider, no interceptors, a pass-through middleware', async () => {
    expect(startTracing('api', { endpoint: undefined })).toBeUndefined();
    expect(tracing()).toBeUndefined();
    expect(temporalClientInterceptors()).toBeUndefined();
    expect(workerTracing()).toBeUndefined();
    expect(trace.getTracer('x').startSpan('s').isRecording()).toBe(false);
    const { url, server } = await serve(appWithSpans());
    const res = await fetch(`${url}/v1/things/7`);
    expect(await res.json()).toEqual({ traced: false });
    server.close();
  });

  test('on: a SERVER span per request named by its route template, child of the caller traceparent, with our request id only', async () => {
    const on = startTracing('api', { spanProcessor: new SimpleSpanProcessor(memory) })!;
    expect(on).toBeDefined();
    expect(temporalClientInterceptors()!.workflow).toHaveLength(2);
    const worker = workerTracing()!;
    expect(worker.activity).toHaveLength(1);
    expect(worker.workflowModules).toEqual([require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')]);
    expect(Object.keys(worker.sinks)).toEqual(['exporter']);

    const { url, server } = await serve(appWithSpans());
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await fetch(`${url}/v1/things/7?secret=1`, {
      headers: {
        'x-request-id': 'req-1',
        traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
        baggage: `${REQUEST_ID_ATTRIBUTE}=forged,${WORKFLOW_ID_ATTRIBUTE}=forged`,
      },
    });
    expect(await res.json()).toEqual({ traced: true });
    expect((await fetch(`${url}/nowhere`)).status).toBe(404);
    server.close();

    const [span, unmatched] = memory.getFinishedSpans();
    expect(span.name).toBe('GET /v1/things/:id');
    expect(span.kind).toBe(SpanKind.SERVER);
    expect(span.spanContext().traceId).toBe(traceId);
    expect(span.parentSpanId).toBe('00f067aa0ba902b7');
    expect(span.attributes).toEqual({
      [REQUEST_ID_ATTRIBUTE]: 'req-1',
      'http.request.method': 'GET',
      'url.path': '/v1/things/7',
      'http.route': '/v1/things/:id',
      'http.response.status_code': 200,
    });
    expect(unmatched.name).toBe('GET');
    expect(unmatched.parentSpanId).toBeUndefined();
    expect(unmatched.attributes['http.response.status_code']).toBe(404);
    expect(unmatched.attributes['http.route']).toBeUndefined();
  });
  test('an RPC call is a CLIENT span; a failure is recorded by its error name, never with the URL and its key', async () => {
    memory.reset();
    const client = createPublicClient({
      transport: tracedHttp('http://127.0.0.1:9/v2/sk-provider-key', 'base-sepolia', { retryCount: 0, timeout: 2_000 }),
    });
    await expect(client.getBlockNumber({ cacheTime: 0 })).rejects.toThrow();
    const [span] = memory.getFinishedSpans();
    expect(span.name).toBe('eth_blockNumber');
    expect(span.kind).toBe(SpanKind.CLIENT);
    expect(span.attributes).toEqual({
      'rpc.system': 'jsonrpc',
      'rpc.method': 'eth_blockNumber',
      'server.address': '127.0.0.1',
      'server.port': 9,
      'x402.network': 'base-sepolia',
    });
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'HttpRequestError' });
    expect(JSON.stringify({ a: span.attributes, s: span.status, e: span.events })).not.toContain('sk-provider-key');
  });
});
