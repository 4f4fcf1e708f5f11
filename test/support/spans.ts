import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

/** A finished span, as the in-memory exporter (this process) or an OTLP receiver (another process) saw it. */
export interface SeenSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: SpanKind;
  attributes: Record<string, unknown>;
}

export function fromReadable(s: ReadableSpan): SeenSpan {
  const c = s.spanContext();
  return {
    service: String(s.resource.attributes['service.name']),
    traceId: c.traceId,
    spanId: c.spanId,
    parentSpanId: s.parentSpanId || undefined,
    name: s.name,
    kind: s.kind,
    attributes: { ...s.attributes },
  };
}

type OtlpValue = { stringValue?: string; intValue?: number | string; boolValue?: boolean; doubleValue?: number };
type OtlpAttribute = { key: string; value: OtlpValue };
const valueOf = (v: OtlpValue) => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue));
const attributes = (list: OtlpAttribute[] = []) => Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));

/**
 * An OTLP/HTTP (JSON) trace receiver on a free loopback port, standing for a collector: what a
 * process with OTEL_EXPORTER_OTLP_ENDPOINT set really exports.
 */
export async function startOtlpReceiver(): Promise<{ endpoint: string; spans: SeenSpan[]; close(): Promise<void> }> {
  const spans: SeenSpan[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const body = req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
      if (req.url !== '/v1/traces' || !String(req.headers['content-type']).startsWith('application/json')) {
        res.writeHead(415).end();
        return;
      }
      const request = JSON.parse(body.toString('utf8'));
      for (const rs of request.resourceSpans ?? []) {
        const service = String(attributes(rs.resource?.attributes)['service.name']);
        for (const ss of rs.scopeSpans ?? [])
          for (const s of ss.spans ?? [])
            spans.push({
              service,
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId || undefined,
              name: s.name,
              // OTLP numbers kinds from 1 (INTERNAL); the API from 0.
              kind: (s.kind - 1) as SpanKind,
              attributes: attributes(s.attributes),
            });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
