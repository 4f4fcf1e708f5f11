import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { rpcFetch } from './rpc-fetch';
import { BaseError, http, HttpRequestError, TimeoutError, type HttpTransport, type HttpTransportConfig } from 'viem';

const tracer = trace.getTracer('x402-rpc');

let onRpcFailure: ((network: string) => void) | undefined;

/**
 * Counts every JSON-RPC call of this process that got no answer (the worker's x402_rpc_errors_total).
 * Process-wide because the clients are (clients.ts caches one per network).
 */
export function countRpcFailures(count: ((network: string) => void) | undefined): void {
  onRpcFailure = count;
}

/**
 * The node did not answer: unreachable, an HTTP error status (429, 5xx) or a timeout. A JSON-RPC
 * error reply (a revert, `nonce too low`) is an answer of a working node and is not counted.
 */
export function isRpcFailure(err: unknown): boolean {
  if (!(err instanceof BaseError)) return !(err instanceof Error && err.name === 'AbortError');
  return err.walk((e) => e instanceof HttpRequestError || e instanceof TimeoutError) !== null;
}

/**
 * viem's `http` transport (over node:http, rpc-fetch.ts) with one CLIENT span per JSON-RPC request
 * (`eth_sendRawTransaction`, ...), a child of whatever is active (an activity, an HTTP request). Its retries are inside the span.
 * Without a registered tracer provider the spans are no-ops. Only the URL's host and port are
 * recorded, and a failure only by its error name: RPC URLs often carry a provider key, and viem's
 * messages quote them. Calls without an answer are counted here too (countRpcFailures), after viem's retries.
 */
export function tracedHttp(url: string, network: string, config: HttpTransportConfig): HttpTransport {
  // rpcFetch enforces viem's reply cap while reading, so viem need not measure the text again.
  const base = http(url, { fetchFn: rpcFetch, maxResponseBodySize: false, ...config });
  const server = new URL(url);
  return ((params) => {
    const transport = base(params);
    const request = ((args, options) =>
      tracer.startActiveSpan(
        args.method,
        {
          kind: SpanKind.CLIENT,
          attributes: {
            'rpc.system': 'jsonrpc',
            'rpc.method': args.method,
            'server.address': server.hostname,
            ...(server.port ? { 'server.port': Number(server.port) } : {}),
            'x402.network': network,
          },
        },
        async (span) => {
          try {
            return await transport.request(args, options);
          } catch (err) {
            span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.name : 'error' });
            if (onRpcFailure && isRpcFailure(err)) onRpcFailure(network);
            throw err;
          } finally {
            span.end();
          }
        },
      )) as typeof transport.request;
    return { ...transport, request };
  }) as HttpTransport;
}
