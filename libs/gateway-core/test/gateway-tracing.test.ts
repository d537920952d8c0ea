// The gateway's spans, exported in memory: one server span per request, one client span
// per call to runtimed, and runtimed given the client span's context (not the caller's).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { INVOCATION_ID_HEADER } from '@kruntimes/api';
import { call, testCa, testServerCert } from '@kruntimes/testing';
import type { TestCert } from '@kruntimes/testing';
import { pino } from 'pino';
import { Gateway } from '../src/index.ts';
import { KrtFailure, TestFunctionRuntime } from './function-runtime-server.ts';

const UID = '2c24c1f0-9f8f-4f80-82d5-3dd16a12d1e6';
const PATH = `/v1/namespaces/demo/runtimes/python/functions/${UID}:invoke`;
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
const HEADERS = { authorization: 'Bearer t', 'content-type': 'application/json' };

let dir: string;
let gatewayCa: TestCert;
let runtimed: TestFunctionRuntime;
let gateway: Gateway;
const exporter = new InMemorySpanExporter();
const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gateway-tracing-test-'));
  gatewayCa = await testCa('gateway-ca');
  const upstreamCa = await testCa('internal-ca');
  const serving = await testServerCert(gatewayCa, { dns: ['localhost'], ips: ['127.0.0.1'] });
  await writeFile(join(dir, 'tls.crt'), serving.certPem);
  await writeFile(join(dir, 'tls.key'), serving.keyPem);
  await writeFile(join(dir, 'ca.crt'), upstreamCa.certPem);
  runtimed = new TestFunctionRuntime();
  const port = await runtimed.listen(await testServerCert(upstreamCa, { dns: ['python.demo.svc'] }));
  gateway = await Gateway.start({
    host: '127.0.0.1',
    port: 0,
    tlsCertFile: join(dir, 'tls.crt'),
    tlsKeyFile: join(dir, 'tls.key'),
    runtimedCaFile: join(dir, 'ca.crt'),
    resolver: { resolve: () => Promise.resolve([{ address: `127.0.0.1:${port}` }]), stop: () => Promise.resolve() },
    logger: pino({ level: 'silent' }),
    tracer: provider.getTracer('test'),
    reloadIntervalMs: 60_000,
  });
});

afterAll(async () => {
  await gateway.stop({ drainMs: 1_000 });
  await runtimed.stop();
  await provider.shutdown();
  await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  exporter.reset();
  runtimed.calls.length = 0;
});

const invoke = (headers: Record<string, string>) =>
  call(`https://127.0.0.1:${gateway.address.port}${PATH}`, { ca: gatewayCa.certPem, headers: { ...HEADERS, ...headers }, body: '{}' });

/** The spans once the request's server span ended (it ends when the response has). */
async function spans(count: number) {
  for (let i = 0; i < 100 && exporter.getFinishedSpans().length < count; i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
  const finished = exporter.getFinishedSpans();
  const server = finished.find((span) => span.kind === SpanKind.SERVER);
  const client = finished.find((span) => span.kind === SpanKind.CLIENT);
  if (server === undefined || client === undefined) throw new Error(`spans: ${finished.map((span) => span.name).join(', ')}`);
  return { server, client };
}

it('continues the caller trace: server span, then a client span whose context runtimed gets', async () => {
  runtimed.behaviour = (request) => Promise.resolve({ result: request.payload });
  const answer = await invoke({ [INVOCATION_ID_HEADER]: 'inv-1', traceparent: TRACEPARENT, tracestate: 'a=1' });
  expect(answer.status).toBe(200);
  const { server, client } = await spans(2);
  expect(server.spanContext().traceId).toBe(TRACE_ID);
  expect(server.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
  expect(server.name).toBe('POST /v1/namespaces/{namespace}/runtimes/{runtime}/functions/{uid}:invoke');
  expect(server.attributes).toMatchObject({
    'kruntimes.invocation_id': 'inv-1',
    'kruntimes.run.namespace': 'demo',
    'kruntimes.runtime': 'python',
    'kruntimes.run.uid': UID,
    'http.response.status_code': 200,
  });
  expect(client.name).toBe('kruntimes.runtimed.v1.FunctionRuntime/InvokeFunction');
  expect(client.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
  expect(client.attributes).toMatchObject({ 'kruntimes.invocation_id': 'inv-1', 'rpc.system': 'grpc' });
  // One traceparent, the client span's: runtimed's span is its child, not the caller's.
  expect(runtimed.calls[0]?.metadata).toMatchObject({ traceparent: `00-${TRACE_ID}-${client.spanContext().spanId}-01`, tracestate: 'a=1' });
});

it('marks both spans failed with the kruntimes code of runtimed answer', async () => {
  runtimed.behaviour = () => Promise.reject(new KrtFailure('FunctionFailed', 'the handler raised'));
  const answer = await invoke({});
  expect(answer.status).toBe(500);
  const { server, client } = await spans(2);
  for (const span of [server, client]) {
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
    expect(span.attributes['kruntimes.error_code']).toBe('FunctionFailed');
  }
  expect(server.parentSpanContext).toBeUndefined();
});
