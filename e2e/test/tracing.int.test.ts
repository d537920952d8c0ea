// Traces of the invoke path in a real backend: the system exports OTLP to Jaeger's
// all-in-one, and the test reads each invocation's trace back from Jaeger's query API.
import { INVOCATION_ID_HEADER } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { Jaeger, waitFor } from '@kruntimes/testing';
import type { JaegerSpan, JaegerTrace } from '@kruntimes/testing';
import { System } from '../src/index.ts';

const PYTHON = `
def handle(event, context):
    if isinstance(event, dict) and event.get("fail"):
        raise ValueError("asked to fail")
    return {"echo": event}
`;

/** The batch span processors export every 5 s (their default); the bound leaves room for a busy machine. */
const TRACE_WAIT_MS = 60_000;
const GATEWAY = 'kruntimes-runtime-gateway';
const RUNTIMED = 'kruntimes-runtimed';
const SERVER = 'kruntimes-runtime-server-python';

let jaeger: Jaeger;
let system: System;
let run: Run;

beforeAll(async () => {
  jaeger = await Jaeger.start();
  system = await System.start({ prefix: 'e2e-tracing', otlpEndpoint: jaeger.otlpEndpoint });
  // Two Pods, three Runs: two of them share an owner, and the first invokes of those two are
  // balanced onto both Pods in turn, so that one reaches its owner through the peer hop.
  await system.createRuntime('py', { language: 'python', replicas: 2, runs: 2 });
  await system.waitRuntimeReady('py', 2);
  for (const name of ['fn', 'fn-b', 'fn-c']) await system.createFunctionRun(name, 'py', PYTHON, 'main:handle');
  run = await system.waitReady('fn');
  await system.waitReady('fn-b');
  await system.waitReady('fn-c');
  await system.grantGetRuns('alice');
}, 240_000);

afterAll(async () => {
  await system.stop();
  await jaeger.stop();
});

/** A span as the test compares it: which service, which kind, which operation. */
interface Step {
  service: string;
  kind: string;
  name: string;
  span: JaegerSpan;
}

const tag = (span: JaegerSpan, key: string): unknown => span.tags.find((t) => t.key === key)?.value;

const parentOf = (span: JaegerSpan): string | undefined => span.references.find((r) => r.refType === 'CHILD_OF')?.spanID;

/** The spans whose parent is not in the trace: the gateway's server span only, once all arrived (a caller's parent is never in Jaeger). */
function roots(trace: JaegerTrace): JaegerSpan[] {
  const known = new Set(trace.spans.map((span) => span.spanID));
  return trace.spans.filter((span) => {
    const parent = parentOf(span);
    return parent === undefined || !known.has(parent);
  });
}

/**
 * The trace as the chain of spans from the gateway's server span down, each the only
 * child of the one before (CHILD_OF references): the order of the hops.
 */
function chain(trace: JaegerTrace): Step[] {
  const step = (span: JaegerSpan): Step => ({
    service: trace.processes[span.processID]?.serviceName ?? '?',
    kind: typeof tag(span, 'span.kind') === 'string' ? (tag(span, 'span.kind') as string) : 'internal',
    name: span.operationName,
    span,
  });
  const top = roots(trace);
  expect(top).toHaveLength(1);
  const steps: Step[] = [];
  let current = top[0];
  while (current !== undefined) {
    steps.push(step(current));
    const id = current.spanID;
    const children = trace.spans.filter((span) => parentOf(span) === id);
    expect(children.length).toBeLessThanOrEqual(1);
    current = children[0];
  }
  expect(steps).toHaveLength(trace.spans.length);
  return steps;
}

const LOCAL_TAIL = [
  `${RUNTIMED} client kruntimes.runtimeserver.v1.RuntimeServer/InvokeFunction`,
  `${SERVER} server kruntimes.runtimeserver.v1.RuntimeServer/InvokeFunction`,
  `${SERVER} internal function handler`,
];
const HEAD = [
  `${GATEWAY} server POST /v1/namespaces/{namespace}/runtimes/{runtime}/functions/{uid}:invoke`,
  `${GATEWAY} client kruntimes.runtimed.v1.FunctionRuntime/InvokeFunction`,
  `${RUNTIMED} server kruntimes.runtimed.v1.FunctionRuntime/InvokeFunction`,
];
const DIRECT = [...HEAD, ...LOCAL_TAIL];
const FORWARDED = [
  ...HEAD,
  `${RUNTIMED} client kruntimes.runtimed.v1.FunctionRuntime/InvokeFunction`,
  `${RUNTIMED} server kruntimes.runtimed.v1.FunctionRuntime/InvokeFunction`,
  ...LOCAL_TAIL,
];

/** A trace span by span: depth, service, kind, name, start offset and duration, and its kruntimes attributes. */
function printedTrace(title: string, trace: JaegerTrace, steps: readonly Step[]): string {
  const start = steps[0]?.span.startTime ?? 0;
  const lines = steps.map(({ service, kind, name, span }, depth) => {
    const at = `+${(((span.startTime ?? start) - start) / 1000).toFixed(2)} ms`;
    const took = `${((span.duration ?? 0) / 1000).toFixed(2)} ms`;
    const attributes = span.tags
      .filter((t) => t.key.startsWith('kruntimes.'))
      .map((t) => `${t.key.slice('kruntimes.'.length)}=${String(t.value)}`)
      .join(' ');
    return `  ${'  '.repeat(depth)}${service} ${kind} ${name} [${at}, ${took}] ${attributes}`;
  });
  return `[trace] ${title}: trace ${trace.traceID}, ${String(steps.length)} spans\n${lines.join('\n')}\n`;
}

/** The one trace of an invocation, once every span of it reached Jaeger (bounded). */
async function traceOf(invocationId: string): Promise<{ trace: JaegerTrace; steps: Step[] }> {
  // Each process exports in its own batches: complete once the handler's span is in and
  // every span but the first has its parent (a forwarding runtimed's spans may come last).
  const complete = (trace: JaegerTrace): boolean =>
    trace.spans.some((span) => span.operationName === 'function handler') && roots(trace).length === 1;
  let seen: JaegerTrace[] = [];
  try {
    const trace = await waitFor(
      `the trace of invocation ${invocationId} in Jaeger`,
      async () => {
        seen = await jaeger.traces(GATEWAY, { 'kruntimes.invocation_id': invocationId });
        const [found] = seen;
        if (found === undefined) return undefined;
        // Jaeger gathers a trace as its services' batches arrive: read it whole by ID.
        const whole = await jaeger.trace(found.traceID);
        return whole !== undefined && complete(whole) ? whole : undefined;
      },
      { timeoutMs: TRACE_WAIT_MS, intervalMs: 500 },
    );
    expect(seen).toHaveLength(1);
    return { trace, steps: chain(trace) };
  } catch (error) {
    throw new Error(`${String(error)}\nJaeger had: ${JSON.stringify(seen).slice(0, 4000)}\n${await jaeger.logTail(20)}`, { cause: error });
  }
}

const described = (steps: Step[]): string[] => steps.map((s) => `${s.service} ${s.kind} ${s.name}`);

test('one trace per invocation: gateway, runtimed (and the peer hop to the owner), Runtime Server and handler, in order', async () => {
  const token = system.token('alice');
  const traceId = '5a1d0c3e9b8f47a6b2c1d0e9f8a7b6c5';
  const runs = await Promise.all(['fn', 'fn-b', 'fn-c'].map((name) => system.getRun(name)));
  const [first, second] = runs.filter((candidate, k) =>
    runs.some((other, j) => j !== k && other.status?.assignedPodUID === candidate.status?.assignedPodUID),
  );
  if (first === undefined || second === undefined) throw new Error('no two Runs share a Pod');
  // The first invokes of two Runs of one owner, one after the other: the gateway has no owner
  // hint for either yet and balances them onto the two Pods in turn, so one is direct and the
  // other forwarded by the non-owner. Then the answer named the owner: the rest are direct.
  const sequence = [first, second, first, first];
  const invocations: { invocationId: string; target: Run }[] = [];
  for (const [i, target] of sequence.entries()) {
    const invocationId = `trace-ok-${i}`;
    invocations.push({ invocationId, target });
    const answer = await system.invoke({
      runtime: 'py',
      uid: target.metadata.uid ?? '',
      token,
      body: `{"n":${i}}`,
      headers: {
        [INVOCATION_ID_HEADER]: invocationId,
        // The first continues the caller's trace.
        ...(i === 0 ? { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } : {}),
      },
    });
    expect(answer.status).toBe(200);
  }
  const shapes = new Set<string>();
  const shapeOf: string[] = [];
  for (const [i, { invocationId, target }] of invocations.entries()) {
    const { trace, steps } = await traceOf(invocationId);
    if (i === 0) {
      expect(trace.traceID).toBe(traceId);
      expect(steps[0]?.span.references).toEqual([expect.objectContaining({ refType: 'CHILD_OF', spanID: '00f067aa0ba902b7' })]);
    }
    const forwarded = steps.length === FORWARDED.length;
    const shape = forwarded ? 'forwarded' : 'direct';
    // The first trace of each shape, span by span, in the test's output.
    if (!shapes.has(shape)) process.stdout.write(printedTrace(`${shape} invocation ${invocationId}`, trace, steps));
    shapes.add(shape);
    shapeOf.push(shape);
    expect(described(steps)).toEqual(forwarded ? FORWARDED : DIRECT);
    for (const { span, name } of steps) {
      // Every span of the invoke path names the invocation; the handler span is inside the server span that does.
      if (name !== 'function handler') expect(tag(span, 'kruntimes.invocation_id')).toBe(invocationId);
      expect(tag(span, 'otel.status_code')).not.toBe('ERROR');
    }
    const [gatewayServer] = steps;
    expect(tag(gatewayServer!.span, 'kruntimes.run.uid')).toBe(target.metadata.uid);
    expect(tag(gatewayServer!.span, 'kruntimes.run.namespace')).toBe(system.name);
    expect(tag(gatewayServer!.span, 'http.response.status_code')).toBe(200);
    const runtimedServers = steps.filter((s) => s.service === RUNTIMED && s.kind === 'server');
    expect(runtimedServers.map((s) => tag(s.span, 'kruntimes.runtimed.port'))).toEqual(forwarded ? ['grpc', 'peer'] : ['grpc']);
    const owner = runtimedServers.at(-1)!.span;
    expect(tag(owner, 'kruntimes.run.name')).toBe(target.metadata.name);
    expect(tag(owner, 'kruntimes.run.attempt')).toBe(1);
    expect(tag(steps.at(-1)!.span, 'kruntimes.run.uid')).toBe(target.metadata.uid);
  }
  expect([...shapes].sort()).toEqual(['direct', 'forwarded']);
  // The two first invokes took one shape each; once the owner was named, the gateway dials it.
  expect(shapeOf.slice(0, 2).sort()).toEqual(['direct', 'forwarded']);
  expect(shapeOf.slice(2)).toEqual(['direct', 'direct']);
}, 180_000);

test('a failed invocation: every span on its path has status ERROR and the kruntimes error code', async () => {
  const invocationId = 'trace-fail-1';
  const answer = await system.invoke({
    runtime: 'py',
    uid: run.metadata.uid ?? '',
    token: system.token('alice'),
    body: '{"fail":true}',
    headers: { [INVOCATION_ID_HEADER]: invocationId },
  });
  const code = (answer.json as { error?: { code: string } } | undefined)?.error?.code;
  expect(code).toBe('FunctionFailed');
  const { steps } = await traceOf(invocationId);
  for (const { span, service, name } of steps) {
    expect({ service, name, status: tag(span, 'otel.status_code'), code: tag(span, 'kruntimes.error_code') }).toEqual({
      service,
      name,
      status: 'ERROR',
      code,
    });
  }
}, 120_000);
