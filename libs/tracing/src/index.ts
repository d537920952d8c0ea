export { ATTR, SpanKind, endFailed, parentOf, remoteParent, startSpan, startTracing, traceHeaders, tracingEnabled } from './tracing.ts';
export type { Context, Span, Tracer, Tracing } from './tracing.ts';
