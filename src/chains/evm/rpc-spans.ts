import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { http, type HttpTransport, type HttpTransportConfig } from 'viem';

const tracer = trace.getTracer('x402-rpc');

/**
 * viem's `http` transport with one CLIENT span per JSON-RPC request (`eth_sendRawTransaction`, ...),
 * a child of whatever is active (an activity, an HTTP request). Its retries are inside the span.
 * Without a registered tracer provider the spans are no-ops. Only the URL's host and port are
 * recorded, and a failure only by its error name: RPC URLs often carry a provider key, and viem's
 * messages quote them.
 */
export function tracedHttp(url: string, network: string, config: HttpTransportConfig): HttpTransport {
  const base = http(url, config);
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
            throw err;
          } finally {
            span.end();
          }
        },
      )) as typeof transport.request;
    return { ...transport, request };
  }) as HttpTransport;
}
