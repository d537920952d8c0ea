import { ROOT_CONTEXT, SpanStatusCode, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { ATTR, SpanKind, endFailed, parentOf, remoteParent, startSpan, startTracing, traceHeaders, tracingEnabled } from './tracing.ts';

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('tracingEnabled', () => {
  it.each([
    [{}, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: '' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' }, true],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_SDK_DISABLED: 'true' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'none' }, false],
  ])('%j: %s', (env, expected) => {
    expect(tracingEnabled(env)).toBe(expected);
  });

  it('starts no SDK without an endpoint', async () => {
    await expect(startTracing('kruntimes-test', {})).resolves.toBeUndefined();
  });

  it('loads the SDK when an endpoint is set, and its tracer makes recording spans', async () => {
    // Nothing listens there: no span is exported (none ends before shutdown), so none is sent.
    const tracing = await startTracing('kruntimes-test', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    expect(tracing).toBeDefined();
    const span = tracing?.tracer.startSpan('probe');
    expect(span?.isRecording()).toBe(true);
    await tracing?.shutdown();
  });
});

describe('trace context', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const tracer = provider.getTracer('test');

  afterEach(() => {
    exporter.reset();
  });

  afterAll(async () => {
    await provider.shutdown();
  });

  it('continues the caller trace and hands on the new span, not the caller', () => {
    const span = startSpan(tracer, 'server', SpanKind.SERVER, remoteParent(TRACEPARENT, 'a=1'), { [ATTR.invocationId]: 'inv-1' });
    const headers = traceHeaders(span);
    span.end();
    const [finished] = exporter.getFinishedSpans();
    expect(finished?.spanContext().traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(finished?.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    expect(headers).toEqual({ traceparent: `00-4bf92f3577b34da6a3ce929d0e0e4736-${span.spanContext().spanId}-01`, tracestate: 'a=1' });
  });

  it('starts a trace for no or an invalid traceparent', () => {
    expect(remoteParent(undefined, undefined)).toBe(ROOT_CONTEXT);
    expect(remoteParent('nonsense', 'a=1')).toBe(ROOT_CONTEXT);
    const span = startSpan(tracer, 'root', SpanKind.SERVER, ROOT_CONTEXT, {});
    expect(traceHeaders(span).tracestate).toBeUndefined();
    span.end();
  });

  it('keeps the caller decision not to sample', () => {
    const span = startSpan(tracer, 'server', SpanKind.SERVER, remoteParent(TRACEPARENT.replace(/01$/, '00'), undefined), {});
    expect(span.isRecording()).toBe(false);
    expect(traceHeaders(span).traceparent).toMatch(/-00$/);
    span.end();
  });

  it('links a child to its parent span and marks failures with the kruntimes code', () => {
    const parent = startSpan(tracer, 'parent', SpanKind.SERVER, ROOT_CONTEXT, {});
    const child = startSpan(tracer, 'child', SpanKind.CLIENT, parentOf(parent), {});
    expect(trace.getSpan(parentOf(parent))).toBe(parent);
    endFailed(child, 'FunctionError', 'boom');
    parent.end();
    const [ended] = exporter.getFinishedSpans();
    expect(ended?.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
    expect(ended?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'FunctionError: boom' });
    expect(ended?.attributes[ATTR.errorCode]).toBe('FunctionError');
  });
});
