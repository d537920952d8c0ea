import { ROOT_CONTEXT, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Attributes, Context, Span, SpanKind, Tracer } from '@opentelemetry/api';
import { TraceState, parseTraceParent } from '@opentelemetry/core';
import type { Sampler } from '@opentelemetry/sdk-trace';
import type * as SdkTrace from '@opentelemetry/sdk-trace';

export { SpanKind } from '@opentelemetry/api';
export type { Context, Span, Tracer } from '@opentelemetry/api';

/** Attribute names on the invoke path's spans (docs/operations.md lists them). */
export const ATTR = {
  invocationId: 'kruntimes.invocation_id',
  namespace: 'kruntimes.run.namespace',
  runtime: 'kruntimes.runtime',
  runName: 'kruntimes.run.name',
  runUid: 'kruntimes.run.uid',
  attempt: 'kruntimes.run.attempt',
  /** The kruntimes error code (docs/errors.md) a failed span ended with. */
  errorCode: 'kruntimes.error_code',
  /** runtimed: `grpc` (from the gateway) or `peer` (a forwarded hop); how it routed: local, forwarded, refused. */
  port: 'kruntimes.runtimed.port',
  route: 'kruntimes.runtimed.route',
} as const;

/** A started tracing SDK: the tracer the invoke path makes its spans with. */
export interface Tracing {
  readonly tracer: Tracer;
  /** Exports what is still queued (bounded by the exporter's timeout), then stops. */
  shutdown(): Promise<void>;
}

type Env = Readonly<Record<string, string | undefined>>;

function nonEmpty(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

/** Whether spans are exported: an OTLP endpoint is configured and the SDK is not disabled. */
export function tracingEnabled(env: Env = process.env): boolean {
  if (nonEmpty(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return false;
  if (nonEmpty(env, 'OTEL_TRACES_EXPORTER')?.toLowerCase() === 'none') return false;
  return nonEmpty(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') !== undefined || nonEmpty(env, 'OTEL_EXPORTER_OTLP_ENDPOINT') !== undefined;
}

/**
 * The tracing SDK of one service, exporting OTLP over HTTP/protobuf (the exporter reads
 * OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, _HEADERS, _TIMEOUT, _COMPRESSION itself), or
 * undefined when no endpoint is configured: then the callers make no span at all, so that
 * tracing off costs nothing on the invoke path (not even the API's no-op spans), and the
 * SDK and its exporter (protobuf serialisation, resources, semantic conventions) are not
 * even loaded: imported only here, when tracing is on (a few MiB of every process otherwise).
 *
 * The provider is deliberately not registered globally and no context manager is
 * installed: the invoke path passes its parent spans explicitly, and nothing else in the
 * process (auto-instrumentation included) is meant to make spans.
 */
export async function startTracing(defaultServiceName: string, env: Env = process.env): Promise<Tracing | undefined> {
  if (!tracingEnabled(env)) return undefined;
  const [{ OTLPTraceExporter }, { resourceFromAttributes }, sdk] = await Promise.all([
    import('@opentelemetry/exporter-trace-otlp-proto'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace'),
  ]);
  const serviceName = nonEmpty(env, 'OTEL_SERVICE_NAME') ?? defaultServiceName;
  const delay = Number(nonEmpty(env, 'OTEL_BSP_SCHEDULE_DELAY') ?? '');
  const provider = new sdk.TracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName }),
    sampler: sampler(env, sdk),
    spanProcessors: [
      new sdk.BatchSpanProcessor({
        exporter: new OTLPTraceExporter(),
        ...(Number.isFinite(delay) && delay > 0 ? { scheduledDelayMillis: delay } : {}),
      }),
    ],
  });
  return {
    tracer: provider.getTracer('kruntimes'),
    shutdown: () => provider.shutdown(),
  };
}

type Samplers = Pick<typeof SdkTrace, 'AlwaysOnSampler' | 'ParentBasedSampler' | 'TraceIdRatioBasedSampler'>;

/** OTEL_TRACES_SAMPLER's parent-based samplers; the default samples every trace its caller did not decide against. */
function sampler(env: Env, { AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler }: Samplers): Sampler {
  const name = nonEmpty(env, 'OTEL_TRACES_SAMPLER')?.toLowerCase();
  const ratio = Number(nonEmpty(env, 'OTEL_TRACES_SAMPLER_ARG') ?? '1');
  if (name === 'parentbased_traceidratio' && ratio >= 0 && ratio <= 1)
    return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  return new ParentBasedSampler({ root: new AlwaysOnSampler() });
}

/**
 * The caller's trace context (a W3C `traceparent`, with its `tracestate`) as a parent
 * context; ROOT_CONTEXT when there is none or it is invalid (the span then starts a trace).
 */
export function remoteParent(traceparent: string | undefined, tracestate: string | undefined): Context {
  if (traceparent === undefined) return ROOT_CONTEXT;
  const spanContext = parseTraceParent(traceparent);
  if (spanContext === null) return ROOT_CONTEXT;
  spanContext.isRemote = true;
  if (tracestate !== undefined) spanContext.traceState = new TraceState(tracestate);
  return trace.setSpanContext(ROOT_CONTEXT, spanContext);
}

/** A span as the parent of the spans that follow it in this process. */
export function parentOf(span: Span): Context {
  return trace.setSpan(ROOT_CONTEXT, span);
}

/** A child span of `parent`. */
export function startSpan(tracer: Tracer, name: string, kind: SpanKind, parent: Context, attributes: Attributes): Span {
  return tracer.startSpan(name, { kind, attributes }, parent);
}

/** What the next hop is given instead of the caller's trace context: this span as its parent. */
export function traceHeaders(span: Span): { traceparent: string; tracestate: string | undefined } {
  const { traceId, spanId, traceFlags, traceState } = span.spanContext();
  return {
    traceparent: `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, '0')}`,
    tracestate: emptyAsUndefined(traceState?.serialize()),
  };
}

/** Ends a span as failed with a kruntimes error code (status ERROR). */
export function endFailed(span: Span, code: string, message: string): void {
  span.setAttribute(ATTR.errorCode, code);
  span.setStatus({ code: SpanStatusCode.ERROR, message: `${code}: ${message}` });
  span.end();
}

function emptyAsUndefined(value: string | undefined): string | undefined {
  return value === '' ? undefined : value;
}
