import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { connect as tlsConnect } from 'node:tls';
import { join } from 'node:path';
import { INVOCATION_ID_HEADER } from '@kruntimes/api';
import { waitFor } from '@kruntimes/testing';
import { pino } from 'pino';
import { METADATA_KEYS } from '@kruntimes/proto';
import { Forwarder, Gateway, OwnerHints, hintKey, startMetricsServer } from '../src/index.ts';
import type { MetricsServer, UpstreamAddress, UpstreamResolver } from '../src/index.ts';
import { KrtFailure, TestFunctionRuntime } from './function-runtime-server.ts';
import type { Behaviour } from './function-runtime-server.ts';
import { call, testCa, testServerCert } from '@kruntimes/testing';
import type { TestCert } from '@kruntimes/testing';

const UID = '2c24c1f0-9f8f-4f80-82d5-3dd16a12d1e6';
const NS = 'demo';
const RUNTIME = 'python';
const PATH = `/v1/namespaces/${NS}/runtimes/${RUNTIME}/functions/${UID}:invoke`;
const TOKEN = 'test-token.abc';
const HEADERS = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

let dir: string;
let gatewayCa: TestCert;
let upstreamCa: TestCert;
let runtimed: TestFunctionRuntime;
let gateway: Gateway;
let metrics: MetricsServer;
let base: string;
const logLines: string[] = [];
/** Addresses the resolver hands out, in order. */
let upstreams: string[];

const resolver: UpstreamResolver = {
  resolve: () => Promise.resolve(upstreams.map((address) => ({ address }))),
  stop: () => Promise.resolve(),
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gateway-test-'));
  gatewayCa = await testCa('gateway-ca');
  upstreamCa = await testCa('internal-ca');
  const serving = await testServerCert(gatewayCa, { dns: ['localhost'], ips: ['127.0.0.1'] });
  await writeFile(join(dir, 'tls.crt'), serving.certPem);
  await writeFile(join(dir, 'tls.key'), serving.keyPem);
  await writeFile(join(dir, 'ca.crt'), upstreamCa.certPem);
  runtimed = new TestFunctionRuntime();
  const port = await runtimed.listen(await testServerCert(upstreamCa, { dns: [`${RUNTIME}.${NS}.svc`] }));
  upstreams = [`127.0.0.1:${port}`];
  metrics = await startMetricsServer('127.0.0.1', 0);
  const logger = pino(
    { level: 'info' },
    {
      write: (line: string) => {
        logLines.push(line);
      },
    },
  );
  gateway = await Gateway.start({
    host: '127.0.0.1',
    port: 0,
    tlsCertFile: join(dir, 'tls.crt'),
    tlsKeyFile: join(dir, 'tls.key'),
    runtimedCaFile: join(dir, 'ca.crt'),
    resolver,
    logger,
    metrics: metrics.metrics,
    reloadIntervalMs: 60_000,
    connectTimeoutMs: 1_000,
  });
  base = `https://127.0.0.1:${gateway.address.port}`;
});

afterAll(async () => {
  await gateway.stop({ drainMs: 1_000 });
  await metrics.shutdown();
  await runtimed.stop();
  await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  runtimed.calls.length = 0;
  runtimed.behaviour = (request) => Promise.resolve({ result: request.payload });
  upstreams = [`127.0.0.1:${runtimed.port}`];
});

const invoke = (
  options: { path?: string; headers?: Record<string, string>; body?: string | Buffer; method?: string; chunked?: boolean } = {},
) => {
  const body = options.body ?? (options.method === undefined || options.method === 'POST' ? '{"x":1}' : undefined);
  return call(`${base}${options.path ?? PATH}`, {
    ca: gatewayCa.certPem,
    headers: options.headers ?? HEADERS,
    ...(body === undefined ? {} : { body }),
    ...(options.method === undefined ? {} : { method: options.method }),
    ...(options.chunked === undefined ? {} : { chunked: options.chunked }),
  });
};

describe('invoke', () => {
  it('forwards body, token, IDs and trace context, and answers the result', async () => {
    runtimed.behaviour = (request) =>
      Promise.resolve({
        result: request.payload,
        outputs: { k: 'v' },
        attempt: 2,
        stdout: { data: 'out', truncated: false, totalBytes: 3 },
      });
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const answer = await invoke({
      headers: { ...HEADERS, [INVOCATION_ID_HEADER]: 'inv-1', traceparent, tracestate: 'a=1' },
      body: '{"hello":"world"}',
    });
    expect(answer.status).toBe(200);
    expect(answer.headers[INVOCATION_ID_HEADER]).toBe('inv-1');
    expect(answer.json).toEqual({
      invocationId: 'inv-1',
      result: { hello: 'world' },
      outputs: { k: 'v' },
      stdout: { data: 'out', truncated: false, totalBytes: 3 },
      attempt: 2,
    });
    const [received] = runtimed.calls;
    expect(received?.request).toMatchObject({
      namespace: NS,
      runtime: RUNTIME,
      runUid: UID,
      invocationId: 'inv-1',
      timeout: { seconds: 60, nanos: 0 },
    });
    expect(received?.request.peerHop).toBeUndefined();
    expect(received?.request.payload.toString()).toBe('{"hello":"world"}');
    expect(received?.metadata).toMatchObject({ authorization: `Bearer ${TOKEN}`, traceparent, tracestate: 'a=1' });
  });

  it('accepts the runs/ alias, a timeout header, and generates an invocation ID when none is sent', async () => {
    const answer = await invoke({
      path: `/v1/namespaces/${NS}/runtimes/${RUNTIME}/runs/${UID}:invoke`,
      headers: { ...HEADERS, 'x-kruntime-timeout-seconds': '2.5' },
    });
    expect(answer.status).toBe(200);
    const id = answer.headers[INVOCATION_ID_HEADER];
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect((answer.json as { invocationId: string }).invocationId).toBe(id);
    expect(runtimed.calls[0]?.request.invocationId).toBe(id);
    expect(runtimed.calls[0]?.request.timeout).toEqual({ seconds: 2, nanos: 500_000_000 });
  });

  it('drops an invalid traceparent instead of failing', async () => {
    const answer = await invoke({ headers: { ...HEADERS, traceparent: 'nonsense', tracestate: 'a=1' } });
    expect(answer.status).toBe(200);
    expect(runtimed.calls[0]?.metadata.traceparent).toBeUndefined();
    expect(runtimed.calls[0]?.metadata.tracestate).toBeUndefined();
  });
});

describe('refused before forwarding', () => {
  const big = Buffer.alloc(1024 * 1024 + 1, 0x20);
  big[0] = 0x5b;
  big[big.length - 1] = 0x5d;
  it.each([
    ['no token', 401, 'Unauthenticated', { headers: { 'content-type': 'application/json' } }],
    ['a Basic credential', 401, 'Unauthenticated', { headers: { ...HEADERS, authorization: 'Basic dXNlcjpwYXNz' } }],
    ['text/plain', 415, 'UnsupportedMediaType', { headers: { ...HEADERS, 'content-type': 'text/plain' } }],
    ['no content type', 415, 'UnsupportedMediaType', { headers: { authorization: `Bearer ${TOKEN}` } }],
    ['invalid JSON', 400, 'InvalidRequest', { body: '{"x":' }],
    ['an empty body', 400, 'InvalidRequest', { body: '' }],
    ['a bad invocation ID', 400, 'InvalidInvocationId', { headers: { ...HEADERS, [INVOCATION_ID_HEADER]: 'x'.repeat(129) } }],
    ['a bad timeout', 400, 'InvalidRequest', { headers: { ...HEADERS, 'x-kruntime-timeout-seconds': '0' } }],
    ['1 MiB + 1 byte with Content-Length', 413, 'PayloadTooLarge', { body: big }],
    ['1 MiB + 1 byte chunked', 413, 'PayloadTooLarge', { body: big, chunked: true }],
    ['a malformed namespace', 400, 'InvalidRequest', { path: `/v1/namespaces/Bad/runtimes/${RUNTIME}/functions/${UID}:invoke` }],
    ['a malformed UID', 400, 'InvalidRequest', { path: `/v1/namespaces/${NS}/runtimes/${RUNTIME}/functions/abc:invoke` }],
    ['an unknown route', 404, 'RouteNotFound', { path: '/v1/other' }],
    ['the root', 404, 'RouteNotFound', { path: '/' }],
    ['GET', 405, 'MethodNotAllowed', { method: 'GET' }],
    ['DELETE', 405, 'MethodNotAllowed', { method: 'DELETE' }],
  ] as const)('%s -> %d %s, with an invocation ID in header and body', async (_what, status, code, options) => {
    const answer = await invoke(options);
    expect(answer.status).toBe(status);
    const body = answer.json as { invocationId: string; error: { code: string; source: string; message: string } };
    expect(body.error.code).toBe(code);
    expect(body.error.source).toBe('platform');
    expect(body.invocationId).toBe(answer.headers[INVOCATION_ID_HEADER]);
    expect(body.invocationId.length).toBeGreaterThan(0);
    expect(runtimed.calls).toHaveLength(0);
  });

  it('exactly 1 MiB of JSON is accepted', async () => {
    const body = Buffer.alloc(1024 * 1024, 0x20);
    body[0] = 0x5b;
    body[body.length - 1] = 0x5d;
    const answer = await invoke({ body, chunked: true });
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ result: [] });
  });

  it.each([
    ['too large', String(1024 * 1024 + 1), HEADERS, /^HTTP\/1\.1 413 /],
    ['without a token', '2', { 'content-type': 'application/json' }, /^HTTP\/1\.1 401 /],
    ['acceptable', '2', HEADERS, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /],
  ])(
    'Expect: 100-continue, %s: the client is told to send its body only when the rest is acceptable',
    async (_what, length, headers, expected) => {
      const socket = tlsConnect({ host: '127.0.0.1', port: gateway.address.port, ca: gatewayCa.certPem });
      const received: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => {
        received.push(chunk);
        // Like a client: the body goes out only after 100 Continue.
        if (Buffer.concat(received).toString().startsWith('HTTP/1.1 100 Continue\r\n\r\n') && length === '2') socket.write('{}');
      });
      await new Promise<void>((resolve, reject) => {
        socket.once('secureConnect', resolve);
        socket.once('error', reject);
      });
      const lines = [
        `POST ${PATH} HTTP/1.1`,
        'Host: 127.0.0.1',
        'Expect: 100-continue',
        `Content-Length: ${length}`,
        ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
        '',
        '',
      ];
      socket.write(lines.join('\r\n'));
      const text = await waitFor(
        'a final answer',
        () => {
          const all = Buffer.concat(received).toString();
          return Promise.resolve(/HTTP\/1\.1 [2-5]\d\d [^\r]*\r\n[\s\S]*\r\n\r\n\{/.test(all) ? all : undefined);
        },
        { timeoutMs: 10_000, intervalMs: 10 },
      );
      socket.destroy();
      expect(text).toMatch(expected);
    },
  );

  it('a 405 says which method is allowed', async () => {
    expect((await invoke({ method: 'GET' })).headers.allow).toBe('POST');
  });

  it('a keep-alive connection still serves after a 413', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: gatewayCa.certPem });
    try {
      const tooBig = await call(`${base}${PATH}`, {
        ca: gatewayCa.certPem,
        headers: HEADERS,
        body: Buffer.alloc(1024 * 1024 + 10, 0x20),
        chunked: true,
        agent,
      });
      expect(tooBig.status).toBe(413);
      const next = await call(`${base}${PATH}`, { ca: gatewayCa.certPem, headers: HEADERS, body: '{}', agent });
      expect(next.status).toBe(200);
    } finally {
      agent.destroy();
    }
  });
});

describe('runtimed answers', () => {
  it.each([
    ['Forbidden', 403, 'platform'],
    ['RunNotFound', 404, 'platform'],
    ['InvocationInFlight', 429, 'platform'],
    ['FunctionFailed', 500, 'function'],
    ['RunNotReady', 503, 'platform'],
    ['OwnerUnavailable', 503, 'platform'],
    ['InvocationTimeout', 504, 'platform'],
    ['Unauthenticated', 401, 'platform'],
  ] as const)('%s -> HTTP %d (%s), the invocation ID echoed', async (code, status, source) => {
    runtimed.behaviour = () => Promise.reject(new KrtFailure(code, `because ${code}`));
    const answer = await invoke({ headers: { ...HEADERS, [INVOCATION_ID_HEADER]: 'inv-e' } });
    expect(answer.status).toBe(status);
    expect(answer.headers[INVOCATION_ID_HEADER]).toBe('inv-e');
    expect(answer.json).toEqual({ invocationId: 'inv-e', error: { code, message: `because ${code}`, source } });
    // "Not now" answers say when to come back; the others do not.
    expect(answer.headers['retry-after']).toBe(status === 429 || status === 503 ? '1' : undefined);
    expect(runtimed.calls).toHaveLength(1);
  });

  it('a failure without kruntimes trailers is read from the bare status', async () => {
    runtimed.behaviour = () => Promise.reject(new KrtFailure('RunNotReady', 'bare', false));
    const answer = await invoke();
    expect(answer.status).toBe(503);
    expect((answer.json as { error: { code: string } }).error.code).toBe('OwnerUnavailable');
  });

  it('a result that is not JSON is a 500 from the platform', async () => {
    runtimed.behaviour = () => Promise.resolve({ result: Buffer.from('not json') });
    const answer = await invoke();
    expect(answer.status).toBe(500);
    expect(answer.json).toMatchObject({ error: { code: 'Internal', source: 'platform' } });
  });
});

describe('upstream connections', () => {
  it('an endpoint that refuses connections is skipped for the next one (nothing was sent to it)', async () => {
    upstreams = ['127.0.0.1:1', `127.0.0.1:${runtimed.port}`];
    const answer = await invoke();
    expect(answer.status).toBe(200);
    expect(runtimed.calls).toHaveLength(1);
  });

  it('no reachable endpoint is a 503 OwnerUnavailable, no endpoint at all a 503 RunNotReady', async () => {
    upstreams = ['127.0.0.1:1', '127.0.0.1:2'];
    expect((await invoke()).json).toMatchObject({ error: { code: 'OwnerUnavailable' } });
    upstreams = [];
    const none = await invoke();
    expect(none.status).toBe(503);
    expect(none.json).toMatchObject({ error: { code: 'RunNotReady' } });
  });

  it('a call that failed after it was sent is never retried, even with another endpoint', async () => {
    upstreams = [`127.0.0.1:${runtimed.port}`, `127.0.0.1:${runtimed.port}`];
    runtimed.behaviour = () => Promise.reject(new KrtFailure('OwnerUnavailable', 'gone', false));
    const answer = await invoke();
    expect(answer.status).toBe(503);
    expect(runtimed.calls).toHaveLength(1);
  });

  it('runtimed must present a certificate for <runtime>.<ns>.svc from the trusted CA', async () => {
    const other = new TestFunctionRuntime();
    const port = await other.listen(await testServerCert(upstreamCa, { dns: [`other.${NS}.svc`] }));
    try {
      upstreams = [`127.0.0.1:${port}`];
      const answer = await invoke();
      expect(answer.status).toBe(503);
      expect(other.calls).toHaveLength(0);
    } finally {
      await other.stop();
    }
  });
});

describe('serving certificate rotation', () => {
  it('new connections get the new certificate, an open keep-alive connection keeps serving with the old one', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: gatewayCa.certPem });
    try {
      const before = await call(`${base}${PATH}`, { ca: gatewayCa.certPem, headers: HEADERS, body: '{}', agent });
      const oldFingerprint = gateway.certificateFingerprint;
      expect(before.fingerprint).toBe(oldFingerprint);
      const next = await testServerCert(gatewayCa, { dns: ['localhost'], ips: ['127.0.0.1'] });
      await writeFile(join(dir, 'tls.crt'), next.certPem);
      await writeFile(join(dir, 'tls.key'), next.keyPem);
      await gateway.reloadNow();
      const newFingerprint = new X509Certificate(next.certPem).fingerprint256;
      expect(gateway.certificateFingerprint).toBe(newFingerprint);
      const fresh = await invoke();
      expect(fresh.fingerprint).toBe(newFingerprint);
      for (let i = 0; i < 3; i += 1) {
        const old = await call(`${base}${PATH}`, { ca: gatewayCa.certPem, headers: HEADERS, body: '{}', agent });
        expect(old.status).toBe(200);
        expect(old.fingerprint).toBe(oldFingerprint);
      }
    } finally {
      agent.destroy();
    }
  });

  it('a key that does not match the certificate is not loaded', async () => {
    const current = gateway.certificateFingerprint;
    const next = await testServerCert(gatewayCa, { dns: ['localhost'], ips: ['127.0.0.1'] });
    const unrelated = await testServerCert(gatewayCa, { dns: ['localhost'] });
    await writeFile(join(dir, 'tls.crt'), next.certPem);
    await writeFile(join(dir, 'tls.key'), unrelated.keyPem);
    await gateway.reloadNow();
    expect(gateway.certificateFingerprint).toBe(current);
    expect((await invoke()).fingerprint).toBe(current);
    await writeFile(join(dir, 'tls.key'), next.keyPem);
    await gateway.reloadNow();
    expect((await invoke()).fingerprint).toBe(new X509Certificate(next.certPem).fingerprint256);
  });
});

describe('runtimed CA rotation', () => {
  it('a new CA file is trusted for new connections once reloaded', async () => {
    const nextCa = await testCa('internal-ca-2');
    const rotated = new TestFunctionRuntime();
    const port = await rotated.listen(await testServerCert(nextCa, { dns: [`${RUNTIME}.${NS}.svc`] }));
    try {
      upstreams = [`127.0.0.1:${port}`];
      expect((await invoke()).status).toBe(503);
      await writeFile(join(dir, 'ca.crt'), nextCa.certPem);
      await gateway.reloadNow();
      expect((await invoke()).status).toBe(200);
      expect(rotated.calls).toHaveLength(1);
    } finally {
      await writeFile(join(dir, 'ca.crt'), upstreamCa.certPem);
      await gateway.reloadNow();
      await rotated.stop();
    }
  });
});

describe('metrics and logs', () => {
  const scrape = (headers: Record<string, string> = {}): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const req = httpRequest(`http://127.0.0.1:${metrics.address.port}/metrics`, { headers }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => {
          body += chunk.toString();
        });
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body });
        });
      });
      req.on('error', reject);
      req.end();
    });

  it('exposes the request, duration, overhead and in-flight series', async () => {
    await invoke();
    const { status, body } = await scrape();
    expect(status).toBe(200);
    expect(body).toMatch(/kruntimes_gateway_requests_total\{route="functions",code="200"\} \d+/);
    expect(body).toMatch(/kruntimes_gateway_requests_total\{route="other",code="404"\} \d+/);
    expect(body).toContain('kruntimes_gateway_request_duration_seconds_bucket{route="functions",le="0.005"}');
    expect(body).toContain('kruntimes_gateway_overhead_seconds_count{route="functions"}');
    expect(body).toMatch(/kruntimes_gateway_inflight_requests 0/);
    // The process gauges every service exposes, under the same names as the controllers'.
    expect(body).toMatch(/^kruntimes_process_heap_used_bytes [1-9]\d*$/m);
    expect(body).toMatch(/^kruntimes_process_resident_bytes [1-9]\d*$/m);
    expect(body).toMatch(/^kruntimes_process_event_loop_delay_p99_seconds [\d.e-]+$/m);
  });

  it('the metrics port refuses a request carrying credentials', async () => {
    const answer = await scrape({ authorization: `Bearer ${TOKEN}` });
    expect(answer.status).toBe(400);
    expect(answer.body).not.toContain('kruntimes_gateway');
  });

  it('a client that goes away mid-body is logged as 499, not as an error', async () => {
    logLines.length = 0;
    const req = httpsRequest(`${base}${PATH}`, {
      method: 'POST',
      ca: gatewayCa.certPem,
      agent: false,
      headers: { ...HEADERS, 'content-length': '100' },
    });
    const closed = new Promise<void>((resolve) => {
      req.on('close', () => {
        resolve();
      });
    });
    req.on('error', () => undefined);
    req.write('{"x":');
    await waitFor(
      'the gateway to be reading the body',
      async () => ((await scrape()).body.includes('kruntimes_gateway_inflight_requests 1') ? true : undefined),
      { timeoutMs: 10_000, intervalMs: 10 },
    );
    req.destroy();
    await closed;
    const line = await waitFor(
      'the access line',
      () => Promise.resolve(logLines.map((text) => JSON.parse(text) as Record<string, unknown>).find((entry) => entry.msg === 'request')),
      { timeoutMs: 10_000, intervalMs: 20 },
    );
    expect(line.status).toBe(499);
    expect(logLines.map((text) => JSON.parse(text) as { level: number }).filter((entry) => entry.level >= 50)).toEqual([]);
  });

  it('logs one access line per request, never the token', async () => {
    logLines.length = 0;
    await invoke({ headers: { ...HEADERS, [INVOCATION_ID_HEADER]: 'inv-log' } });
    const lines = logLines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === 'request');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      method: 'POST',
      path: PATH,
      status: 200,
      invocationId: 'inv-log',
      runUID: UID,
      namespace: NS,
      runtime: RUNTIME,
    });
    expect(typeof lines[0]?.durationMs).toBe('number');
    expect(logLines.join('\n')).not.toContain(TOKEN);
  });
});

describe('shutdown', () => {
  const startAnother = (): Promise<Gateway> =>
    Gateway.start({
      host: '127.0.0.1',
      port: 0,
      tlsCertFile: join(dir, 'tls.crt'),
      tlsKeyFile: join(dir, 'tls.key'),
      runtimedCaFile: join(dir, 'ca.crt'),
      resolver,
      logger: pino({ level: 'silent' }),
      reloadIntervalMs: 60_000,
    });

  it('stops accepting at once, lets the request in flight finish, then closes', async () => {
    const other = await startAnother();
    const url = `https://127.0.0.1:${other.address.port}${PATH}`;
    const gate: { release?: () => void } = {};
    runtimed.behaviour = () =>
      new Promise((resolve) => {
        gate.release = () => {
          resolve({ result: Buffer.from('"done"') });
        };
      });
    const inflight = call(url, { ca: gatewayCa.certPem, headers: HEADERS, body: '{}' });
    await waitFor('the call to reach runtimed', () => Promise.resolve(gate.release === undefined ? undefined : true), {
      timeoutMs: 10_000,
      intervalMs: 10,
    });
    const stopping = other.stop({ drainMs: 20_000 });
    await expect(call(url, { ca: gatewayCa.certPem, headers: HEADERS, body: '{}' })).rejects.toThrow(/ECONNREFUSED/);
    gate.release?.();
    const answer = await inflight;
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ result: 'done' });
    await stopping;
  });

  it('the drain is bounded: what is still in flight at the bound is cut', async () => {
    const other = await startAnother();
    runtimed.behaviour = () => new Promise(() => undefined);
    const inflight = call(`https://127.0.0.1:${other.address.port}${PATH}`, { ca: gatewayCa.certPem, headers: HEADERS, body: '{}' });
    await waitFor('the call to reach runtimed', () => Promise.resolve(runtimed.calls.length === 1 ? true : undefined), {
      timeoutMs: 10_000,
      intervalMs: 10,
    });
    await other.stop({ drainMs: 200 });
    await expect(inflight).rejects.toThrow();
  });
});

describe('owner hints', () => {
  const servers: TestFunctionRuntime[] = [];
  const warnings: string[] = [];
  let forwarder: Forwarder;
  let hints: OwnerHints;
  let endpoints: UpstreamAddress[];
  const request = (id: string) => ({
    namespace: NS,
    runtime: RUNTIME,
    uid: UID,
    invocationId: id,
    payload: Buffer.from('{}'),
    timeoutMs: 5_000,
    token: TOKEN,
    signal: new AbortController().signal,
  });
  /** An answer that names `ip` as the owner, as runtimed's trailers do. */
  const naming =
    (ip: string, attempt = 1): Behaviour =>
    (_request, context) => {
      context.trailer.set(METADATA_KEYS.ownerAddress, ip);
      context.trailer.set(METADATA_KEYS.ownerEpoch, String(attempt));
      return Promise.resolve({ result: Buffer.from('"ok"') });
    };

  beforeAll(async () => {
    const cert = await testServerCert(upstreamCa, { dns: [`${RUNTIME}.${NS}.svc`] });
    // Two runtimed on two loopback addresses: the hint is matched by IP.
    for (const host of ['127.0.0.1', '127.0.0.2']) {
      const server = new TestFunctionRuntime();
      await server.listen(cert, host);
      servers.push(server);
    }
  });

  afterAll(async () => {
    for (const server of servers) await server.stop();
  });

  beforeEach(() => {
    hints = new OwnerHints();
    const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) });
    forwarder = new Forwarder({
      resolver: { resolve: () => Promise.resolve(endpoints), stop: () => Promise.resolve() },
      caPem: upstreamCa.certPem,
      logger,
      ownerHints: hints,
      connectTimeoutMs: 1_000,
    });
    const [a, b] = servers;
    if (a === undefined || b === undefined) throw new Error('no servers');
    for (const server of servers) server.calls.length = 0;
    // The balanced order always puts A first here: only a hint makes B first.
    endpoints = [
      { address: `127.0.0.1:${a.port}`, ip: '127.0.0.1' },
      { address: `127.0.0.2:${b.port}`, ip: '127.0.0.2' },
    ];
    a.behaviour = naming('127.0.0.2');
    b.behaviour = naming('127.0.0.2');
    warnings.length = 0;
  });

  afterEach(() => {
    forwarder.close();
  });

  const callsOf = () => servers.map((server) => server.calls.map((c) => c.request.invocationId));

  it('dials the owner an answer named, next time and after', async () => {
    for (const id of ['first', 'second', 'third']) expect((await forwarder.forward(request(id))).ok).toBe(true);
    expect(callsOf()).toEqual([['first'], ['second', 'third']]);
  });

  it('a 503 RunNotReady drops the hint: the next invoke takes the balanced path', async () => {
    const [, b] = servers;
    await forwarder.forward(request('learn'));
    if (b !== undefined) b.behaviour = () => Promise.reject(new KrtFailure('RunNotReady', 'not ready'));
    const refused = await forwarder.forward(request('refused'));
    expect(refused.ok ? 200 : refused.error.status).toBe(503);
    const [a] = servers;
    if (a !== undefined) a.behaviour = () => Promise.resolve({ result: Buffer.from('"ok"') });
    expect((await forwarder.forward(request('balanced'))).ok).toBe(true);
    expect(callsOf()).toEqual([['learn', 'balanced'], ['refused']]);
  });

  it('a hinted owner that refuses connections: the fallback serves it once, the hint is dropped and not dialled again', async () => {
    const [a] = servers;
    if (a === undefined) throw new Error('no server');
    // 127.0.0.3 has no listener: the hint points at a Pod that stopped answering.
    endpoints = [...endpoints, { address: '127.0.0.3:1', ip: '127.0.0.3' }];
    hints.remember(hintKey(NS, RUNTIME, UID), { ip: '127.0.0.3', attempt: 1 });
    a.behaviour = () => Promise.resolve({ result: Buffer.from('"ok"') });
    expect((await forwarder.forward(request('fallback'))).ok).toBe(true);
    expect((await forwarder.forward(request('after'))).ok).toBe(true);
    expect(callsOf()).toEqual([['fallback', 'after'], []]);
    expect(warnings.filter((line) => line.includes('could not connect'))).toHaveLength(1);
    expect(hints.size).toBe(0);
  });

  it('a hint outside the endpoints is never dialled', async () => {
    hints.remember(hintKey(NS, RUNTIME, UID), { ip: '127.0.0.9', attempt: 5 });
    const result = await forwarder.forward(request('forged'));
    expect(result.upstream).toBe(endpoints[0]?.address);
    expect(warnings).toEqual([]);
  });
});
