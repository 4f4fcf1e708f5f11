import {
  context,
  defaultTextMapGetter,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type Span, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type {
  Next,
  WorkflowClientInterceptor,
  WorkflowSignalWithStartInput,
  WorkflowStartInput,
  WorkflowStartUpdateWithStartInput,
} from '@temporalio/client';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { Middleware } from 'koa';
import { REQUEST_ID_ATTRIBUTE, WORKFLOW_ID_ATTRIBUTE } from './trace-attributes';

/**
 * One request, one trace (docs/decisions/one-request-one-trace.md): the HTTP server span, the
 * Temporal start, the workflow run, its (local) activities and each RPC call share one trace id.
 *
 * Tracing is on when OTEL_EXPORTER_OTLP_ENDPOINT is set (spans go there over OTLP/HTTP; the other
 * standard OTEL_EXPORTER_OTLP_* and OTEL_BSP_* variables apply) or when a test passes its own span
 * processor. Off, no SDK is registered: the OpenTelemetry API stays a no-op, the HTTP middleware is
 * a pass-through and neither Temporal client nor worker gets an interceptor.
 *
 * The request id and the workflow id travel as W3C baggage (our own entries only: a caller's
 * baggage is ignored) through Temporal headers, and every span started under them carries them as
 * the attributes `x402.request_id` and `temporal.workflow_id`.
 */

export type TracedService = 'api' | 'topup' | 'worker';

export interface Tracing {
  readonly resource: Resource;
  /** Where finished spans go (the OTLP batch processor, or a test's). */
  readonly exportProcessor: SpanProcessor;
  shutdown(): Promise<void>;
}

let active: Tracing | undefined;

/** The tracing of this process, if it is on. */
export const tracing = (): Tracing | undefined => active;

/**
 * Registers the tracer provider of this process (once). `endpoint` is OTEL_EXPORTER_OTLP_ENDPOINT;
 * tests pass `spanProcessor` (e.g. a SimpleSpanProcessor over an InMemorySpanExporter) instead.
 */
export function startTracing(service: TracedService, opts: { endpoint?: string; spanProcessor?: SpanProcessor }): Tracing | undefined {
  if (active) return active;
  if (!opts.endpoint && !opts.spanProcessor) return undefined;
  const resource = new Resource({ 'service.name': `x402-${service}` });
  // The exporter reads OTEL_EXPORTER_OTLP_ENDPOINT (and _HEADERS, _TIMEOUT) itself and posts to <endpoint>/v1/traces.
  const exportProcessor = opts.spanProcessor ?? new BatchSpanProcessor(new OTLPTraceExporter());
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BaggageAttributes(), exportProcessor] });
  // AsyncLocalStorage context and the W3C trace-context + baggage propagators (Temporal headers).
  provider.register();
  active = {
    resource,
    exportProcessor,
    async shutdown() {
      await provider.shutdown();
    },
  };
  return active;
}

/** Copies our baggage entries onto every span started under them. */
class BaggageAttributes implements SpanProcessor {
  onStart(span: Span, parent: Context): void {
    const baggage = propagation.getBaggage(parent);
    for (const key of [REQUEST_ID_ATTRIBUTE, WORKFLOW_ID_ATTRIBUTE]) {
      const value = baggage?.getEntry(key)?.value;
      if (value) span.setAttribute(key, value);
    }
  }
  onEnd(): void {}
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** `parent` with our baggage entry `key` = `value` added. */
function withEntry(parent: Context, key: string, value: string): Context {
  const baggage = propagation.getBaggage(parent) ?? propagation.createBaggage();
  return propagation.setBaggage(parent, baggage.setEntry(key, { value }));
}

const traceContext = new W3CTraceContextPropagator();

/**
 * Koa middleware (after the request id): one SERVER span per request, named by method and route
 * template, child of the caller's `traceparent` when it sends one. Its context (with the request id
 * as baggage) is active for everything the handlers do, the Temporal start included.
 */
export function httpServerSpans<S extends { requestId: string }>(): Middleware<S> {
  if (!active) return (_ctx, next) => next();
  const tracer = trace.getTracer('x402-http');
  return async (ctx, next) => {
    const parent = withEntry(
      traceContext.extract(ROOT_CONTEXT, ctx.headers, defaultTextMapGetter),
      REQUEST_ID_ATTRIBUTE,
      ctx.state.requestId,
    );
    const span = tracer.startSpan(
      ctx.method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': ctx.method, 'url.path': ctx.path } },
      parent,
    );
    try {
      await context.with(trace.setSpan(parent, span), next);
    } finally {
      const route = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
      if (route) {
        span.updateName(`${ctx.method} ${String(route)}`);
        span.setAttribute('http.route', String(route));
      }
      span.setAttribute('http.response.status_code', ctx.status);
      if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
  };
}

/** Puts the workflow id into the baggage, so the start span and everything the workflow does carry it. */
class WorkflowIdBaggage implements WorkflowClientInterceptor {
  private run<T>(workflowId: string, fn: () => Promise<T>): Promise<T> {
    return context.with(withEntry(context.active(), WORKFLOW_ID_ATTRIBUTE, workflowId), fn);
  }
  startWithDetails(input: WorkflowStartInput, next: Next<WorkflowClientInterceptor, 'startWithDetails'>) {
    return this.run(input.options.workflowId, () => next(input));
  }
  signalWithStart(input: WorkflowSignalWithStartInput, next: Next<WorkflowClientInterceptor, 'signalWithStart'>) {
    return this.run(input.options.workflowId, () => next(input));
  }
  startUpdateWithStart(input: WorkflowStartUpdateWithStartInput, next: Next<WorkflowClientInterceptor, 'startUpdateWithStart'>) {
    return this.run(input.workflowStartOptions.workflowId, () => next(input));
  }
}

/** The `interceptors` option of a Temporal Client: none when tracing is off. */
export function temporalClientInterceptors(): { workflow: WorkflowClientInterceptor[] } | undefined {
  if (!active) return undefined;
  // Ours first (outermost): the start span begins inside the context that names the workflow.
  return { workflow: [new WorkflowIdBaggage(), new OpenTelemetryWorkflowClientInterceptor()] };
}

/**
 * What a Worker needs for tracing, or undefined when it is off: activity spans (local activities
 * included), the workflow interceptor module of @temporalio/interceptors-opentelemetry (spans made
 * in the sandbox) and the sink that hands those spans to our export processor.
 */
export function workerTracing():
  { activity: ActivityInterceptorsFactory[]; workflowModules: string[]; sinks: InjectedSinks<never> } | undefined {
  if (!active) return undefined;
  return {
    activity: [
      (ctx) => ({
        inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
        outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
      }),
    ],
    workflowModules: [require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')],
    sinks: { exporter: makeWorkflowExporter(active.exportProcessor, active.resource) } as InjectedSinks<never>,
  };
}
