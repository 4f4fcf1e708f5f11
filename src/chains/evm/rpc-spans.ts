import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { http, type HttpTransport, type HttpTransportConfig } from 'viem';
import { redactUrls } from '../../observability/redact';
import { NETWORK_ATTRIBUTE } from '../../observability/trace-attributes';

const tracer = trace.getTracer('x402-rpc');

/**
 * viem's `http` transport with one CLIENT span per JSON-RPC request (`eth_sendRawTransaction`, ...),
 * a child of whatever is active (an activity, an HTTP request). Its retries are inside the span.
 * Without a registered tracer provider the spans are no-ops. The URL is recorded as its origin
 * only: RPC URLs often carry a provider key.
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
            [NETWORK_ATTRIBUTE]: network,
          },
        },
        async (span) => {
          try {
            return await transport.request(args, options);
          } catch (err) {
            span.setStatus({ code: SpanStatusCode.ERROR, message: redactUrls(err instanceof Error ? err.message : String(err)) });
            throw err;
          } finally {
            span.end();
          }
        },
      )) as typeof transport.request;
    return { ...transport, request };
  }) as HttpTransport;
}
