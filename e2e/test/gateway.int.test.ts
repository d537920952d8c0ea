import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DEFAULTS, INVOCATION_ID_HEADER } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { waitFor } from '@kruntimes/testing';
import { call } from '@kruntimes/testing';
import type { HttpAnswer } from '@kruntimes/testing';
import { System, invokeApiViolations, listeningSockets, plaintextRequestWithToken, processesOfGroups } from '../src/index.ts';

const PYTHON = `
import time

def handle(event, context):
    if isinstance(event, dict) and "sleep" in event:
        time.sleep(event["sleep"])
    context.set_output("lang", "python")
    return {"echo": event, "invocation": context.invocation_id}
`;

const BASH = `
handle() {
  local event
  event=$(cat)
  printf '{"echo":%s,"lang":"bash"}' "$event"
}
`;

let system: System;
let python: Run;
let bash: Run;

beforeAll(async () => {
  // A shutdown delay long enough for the SIGTERM test's steps "within the delay" on a busy machine.
  system = await System.start({ prefix: 'e2e-gateway', gatewayShutdownDelaySeconds: 8 });
  await system.createRuntime('py', { language: 'python' });
  await system.createRuntime('sh', { language: 'bash' });
  await system.createFunctionRun('fn-py', 'py', PYTHON, 'main:handle');
  await system.createFunctionRun('fn-sh', 'sh', BASH, 'handle');
  await system.createRuntime('py2', { language: 'python', replicas: 2 });
  python = await system.waitReady('fn-py');
  bash = await system.waitReady('fn-sh');
  await system.grantGetRuns('alice');
}, 180_000);

afterAll(async () => {
  await system.stop();
});

const uidOf = (run: Run): string => run.metadata.uid ?? '';

/** Reads the answer to a request, whole. */
async function answerOf(sent: ClientRequest): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  const [response] = (await once(sent, 'response')) as [IncomingMessage];
  let body = '';
  for await (const chunk of response) body += (chunk as Buffer).toString('utf8');
  return { status: response.statusCode ?? 0, headers: response.headers, body };
}

test("a Python and a Bash function, each on its own Runtime Pod, invoked through the gateway with the caller's own token", async () => {
  const token = system.token('alice');
  const py = await system.invoke({
    runtime: 'py',
    uid: uidOf(python),
    token,
    body: '{"n":1}',
    headers: { [INVOCATION_ID_HEADER]: 'e2e-py-1' },
  });
  expect(py.status).toBe(200);
  expect(py.headers[INVOCATION_ID_HEADER]).toBe('e2e-py-1');
  expect(py.json).toMatchObject({
    invocationId: 'e2e-py-1',
    result: { echo: { n: 1 }, invocation: 'e2e-py-1' },
    outputs: { lang: 'python' },
    attempt: 1,
  });

  const sh = await system.invoke({ runtime: 'sh', uid: uidOf(bash), token, body: '{"n":2}', route: 'runs' });
  expect(sh.status).toBe(200);
  expect(sh.json).toMatchObject({ result: { echo: { n: 2 }, lang: 'bash' } });
  const generated = sh.headers[INVOCATION_ID_HEADER];
  expect(generated).toMatch(/^[0-9a-f-]{36}$/);
  expect((sh.json as { invocationId: string }).invocationId).toBe(generated);
  // Both routes answer as the invoke API's OpenAPI document says (the runs alias too).
  expect(invokeApiViolations(system.invokeUrl('py', uidOf(python)), py)).toEqual([]);
  expect(invokeApiViolations(system.invokeUrl('sh', uidOf(bash), 'runs'), sh)).toEqual([]);

  expect(python.status?.assignedPodUID).not.toBe(bash.status?.assignedPodUID);
});

test('the Authorization scheme is read in any case (RFC 7235): `authorization: bearer <token>` is served', async () => {
  const answer = await system.invoke({
    runtime: 'py',
    uid: uidOf(python),
    body: '{"n":3}',
    headers: { authorization: `bearer ${system.token('alice')}` },
  });
  expect({ status: answer.status, json: answer.json }).toMatchObject({ status: 200, json: { result: { echo: { n: 3 } } } });
});

const errorOf = (answer: HttpAnswer): { code: string; source: string } | undefined =>
  (answer.json as { error?: { code: string; source: string } } | undefined)?.error;

test('the gateway balances a Run\'s first invoke over the ready runtimed Pods, then dials the owner its answer named (docs/invoke-contract.md "Owner affinity")', async () => {
  const pods = await system.waitRuntimeReady('py2', 2);
  await system.createFunctionRun('fn-py2', 'py2', PYTHON, 'main:handle');
  const run = await system.waitReady('fn-py2');
  const token = system.token('alice');
  for (let i = 0; i < 6; i += 1) {
    const answer = await system.invoke({ runtime: 'py2', uid: uidOf(run), token, headers: { [INVOCATION_ID_HEADER]: `rr-${i}` } });
    expect({ i, status: answer.status }).toEqual({ i, status: 200 });
  }
  const upstreams = await waitFor(
    'the access log lines of the six invokes',
    async () => {
      const lines = (await system.logLinesContaining(['"invocationId":"rr-'])).filter((entry) => entry.file.endsWith('gateway.log'));
      if (lines.length !== 6) return undefined;
      const entries = lines.map((entry) => JSON.parse(entry.line) as { upstream: string; invocationId: string });
      return entries.sort((a, b) => a.invocationId.localeCompare(b.invocationId)).map((entry) => entry.upstream);
    },
    { timeoutMs: 10_000, intervalMs: 100 },
  );
  const grpcAddress = (ip: string | undefined): string => `${ip ?? ''}:${String(DEFAULTS.runtimedGrpcPort)}`;
  // The first went to one of the ready runtimed (a non-owner forwards it to the owner once).
  expect(pods.map((pod) => grpcAddress(pod.status?.podIP))).toContain(upstreams[0]);
  const owner = grpcAddress((await system.assignedPod('fn-py2')).status?.podIP);
  expect(upstreams.slice(1)).toEqual([owner, owner, owner, owner, owner]);
});

test('refused at the gateway: 401 without a token, 415, 400 on bad JSON and a bad invocation ID, 413 at 1 MiB + 1 byte; every answer carries an invocation ID', async () => {
  const uid = uidOf(python);
  const token = system.token('alice');
  const tooBig = Buffer.alloc(1024 * 1024 + 1, 0x20);
  tooBig[0] = 0x5b;
  tooBig[tooBig.length - 1] = 0x5d;
  const cases: [string, Parameters<System['invoke']>[0], number, string][] = [
    ['no token', { runtime: 'py', uid }, 401, 'Unauthenticated'],
    ['text/plain', { runtime: 'py', uid, token, headers: { 'content-type': 'text/plain' } }, 415, 'UnsupportedMediaType'],
    ['invalid JSON', { runtime: 'py', uid, token, body: '{"a":' }, 400, 'InvalidRequest'],
    [
      'a bad invocation ID',
      { runtime: 'py', uid, token, headers: { [INVOCATION_ID_HEADER]: 'x'.repeat(129) } },
      400,
      'InvalidInvocationId',
    ],
    ['1 MiB + 1 byte', { runtime: 'py', uid, token, body: tooBig }, 413, 'PayloadTooLarge'],
    ['1 MiB + 1 byte, chunked', { runtime: 'py', uid, token, body: tooBig, chunked: true }, 413, 'PayloadTooLarge'],
    ['a malformed UID', { runtime: 'py', uid: 'not-a-uid', token }, 400, 'InvalidRequest'],
    ['GET', { runtime: 'py', uid, token, method: 'GET' }, 405, 'MethodNotAllowed'],
  ];
  for (const [what, options, status, code] of cases) {
    const answer = await system.invoke(options);
    expect({ what, status: answer.status, code: errorOf(answer)?.code }).toEqual({ what, status, code });
    // As the invoke API's OpenAPI document says (docs/invoke-api.openapi.yaml): status, headers, JSON body.
    expect({ what, violations: invokeApiViolations(system.invokeUrl(options.runtime, options.uid), answer) }).toEqual({
      what,
      violations: [],
    });
    const id = answer.headers[INVOCATION_ID_HEADER];
    expect(typeof id === 'string' && id.length > 0).toBe(true);
    expect((answer.json as { invocationId: string }).invocationId).toBe(id);
  }
  // Exactly at the bound is accepted and reaches the function.
  const atBound = Buffer.alloc(1024 * 1024, 0x20);
  atBound[0] = 0x5b;
  atBound[atBound.length - 1] = 0x5d;
  const accepted = await system.invoke({ runtime: 'py', uid, token, body: atBound, headers: { [INVOCATION_ID_HEADER]: 'at-bound' } });
  expect(accepted.status).toBe(200);
  expect(accepted.json).toMatchObject({ invocationId: 'at-bound', result: { echo: [] } });
  expect(invokeApiViolations(system.invokeUrl('py', uid), accepted)).toEqual([]);
});

test('the gateway certificate is rotated under traffic: new connections get the new one, an open keep-alive connection finishes its requests on the old one', async () => {
  const gateway = system.gateway;
  if (gateway === undefined) throw new Error('no gateway');
  const token = system.token('alice');
  // The busy connection invokes the Bash Run, the new connections the Python one: one
  // invocation in flight per Run, so sharing a Run would make them 429 each other.
  const url = system.invokeUrl('sh', uidOf(bash));
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const agent = new Agent({ keepAlive: true, maxSockets: 1, ca: gateway.caPem });
  try {
    const first = await call(url, { ca: gateway.caPem, headers, body: '{"i":0}', agent });
    expect(first.status).toBe(200);
    const oldFingerprint = first.fingerprint;
    // The long-lived connection stays busy while the files change.
    // An object, not a let: the flag flips while the loop awaits.
    const traffic = { stop: false };
    const onOld: HttpAnswer[] = [];
    const busy = (async () => {
      for (let i = 1; i <= 2_000 && !traffic.stop; i += 1)
        onOld.push(await call(url, { ca: gateway.caPem, headers, body: `{"i":${i}}`, agent }));
    })();
    const newFingerprint = await system.rotateGatewayCertificate();
    expect(newFingerprint).not.toBe(oldFingerprint);
    const fresh = await waitFor(
      'a new connection to present the new gateway certificate',
      async () => {
        const answer = await system.invoke({ runtime: 'py', uid: uidOf(python), token });
        return answer.fingerprint === newFingerprint ? answer : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    expect(fresh.status).toBe(200);
    const beforeStop = onOld.length;
    await waitFor(
      'the old connection to serve more requests after the rotation',
      () => Promise.resolve(onOld.length >= beforeStop + 3 ? true : undefined),
      { timeoutMs: 20_000, intervalMs: 50 },
    );
    traffic.stop = true;
    await busy;
    expect(onOld.length).toBeGreaterThan(3);
    expect(onOld.every((answer) => answer.status === 200 && answer.fingerprint === oldFingerprint)).toBe(true);
  } finally {
    agent.destroy();
  }
});

test('no port of any component serves a plaintext HTTP request carrying a token', async () => {
  const gateway = system.gateway;
  if (gateway === undefined) throw new Error('no gateway');
  const token = system.token('alice');
  const pids = await processesOfGroups([...system.node.pids(), gateway.pid]);
  const sockets = await listeningSockets(pids);
  const ports = new Set(sockets.map((socket) => `${socket.host}:${socket.port}`));
  // Every component is there: the gateway and its metrics, per Runtime Pod runtimed's
  // grpc, peer, health and metrics ports and the Runtime Server.
  expect(ports).toContain(`127.0.0.1:${gateway.port}`);
  expect(ports).toContain(`127.0.0.1:${gateway.metricsPort}`);
  for (const run of [python, bash]) {
    const pod = await system.core.readNamespacedPod({ namespace: system.name, name: run.status?.assignedPod ?? '' });
    const ip = pod.status?.podIP ?? '';
    for (const port of [7443, 7444, 7445, 7450]) expect(ports).toContain(`${ip}:${port}`);
  }
  const served: string[] = [];
  for (const address of ports) {
    const [host = '', port = ''] = address.split(/:(?=\d+$)/);
    for (const request of [
      { method: 'GET', path: '/metrics' },
      { method: 'POST', path: `/v1/namespaces/${system.name}/runtimes/py/functions/${uidOf(python)}:invoke` },
    ]) {
      const attempt = await plaintextRequestWithToken(host, Number(port), token, request);
      // Refused: the connection closed, or a non-HTTP/1 answer (a TLS alert, an HTTP/2
      // GOAWAY), or an HTTP error status. Served: any HTTP/1 status below 400.
      if (attempt.status !== undefined && attempt.status < 400)
        served.push(`${address} ${request.method} ${request.path}: ${attempt.response.slice(0, 200)}`);
    }
  }
  expect(served).toEqual([]);
});

test('the gateway logs one access line per request with its invocation ID and Run UID', async () => {
  const token = system.token('alice');
  await system.invoke({ runtime: 'py', uid: uidOf(python), token, headers: { [INVOCATION_ID_HEADER]: 'access-log-1' } });
  const line = await waitFor(
    'the access log line',
    async () => {
      const found = await system.logLinesContaining(['"invocationId":"access-log-1"']);
      return found.find((entry) => entry.file.endsWith('gateway.log'));
    },
    { timeoutMs: 10_000, intervalMs: 100 },
  );
  expect(JSON.parse(line.line)).toMatchObject({
    msg: 'request',
    method: 'POST',
    status: 200,
    runUID: uidOf(python),
    namespace: system.name,
    runtime: 'py',
  });
});

describe('a body over 1 MiB from a Python client that writes before it reads gets the 413, not a reset', () => {
  const MiB = 1024 * 1024;
  const script = join(import.meta.dirname, 'fixtures', 'post-large-body.py');
  // One file for every case, removed with its directory after them.
  let caFile = '';
  beforeAll(async () => {
    const gateway = system.gateway;
    if (gateway === undefined) throw new Error('no gateway');
    caFile = join(await mkdtemp(join(tmpdir(), 'gateway-413-')), 'gateway-ca.crt');
    await writeFile(caFile, gateway.caPem);
  });
  afterAll(async () => {
    if (caFile !== '') await rm(join(caFile, '..'), { recursive: true, force: true });
  });
  test.each(
    [MiB + 1, 4 * MiB, 32 * MiB].flatMap((size) => ['urllib', 'expect-nowait', 'expect-wait'].map((mode) => [size, mode] as const)),
  )(
    '%i bytes, %s',
    async (size, mode) => {
      const url = system.invokeUrl('py', uidOf(await system.getRun('fn-py')));
      const { stdout } = await promisify(execFile)('python3', [script, url, caFile, String(size), mode], { timeout: 120_000 });
      const seen = JSON.parse(stdout) as { status?: number; body?: string; error?: string };
      expect({ status: seen.status, error: seen.error }).toEqual({ status: 413, error: undefined });
      expect(JSON.parse(seen.body ?? '')).toMatchObject({ error: { code: 'PayloadTooLarge', source: 'platform' } });
    },
    150_000,
  );
});

test('SIGTERM: not ready at once and still serving new connections for the shutdown delay, then refusing them while the invocation in flight finishes; exit 0', async () => {
  const gateway = system.gateway;
  if (gateway === undefined) throw new Error('no gateway');
  const token = system.token('alice');
  const state = { answeredAt: 0, exitedAt: 0 };
  // In flight: its headers are in, the last byte of its body is held back until the listener closed.
  const url = new URL(system.invokeUrl('py', uidOf(python)));
  const body = '{"sleep":1}';
  const held = request({
    host: url.hostname,
    port: url.port,
    method: 'POST',
    path: url.pathname,
    ca: gateway.caPem,
    agent: false,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      [INVOCATION_ID_HEADER]: 'drained',
    },
  });
  held.write(body.slice(0, -1));
  const inflight = answerOf(held).then((answer) => {
    state.answeredAt = performance.now();
    return answer;
  });
  // Awaited below; a failure before then must fail the test, not the worker.
  inflight.catch(() => undefined);
  const exited = gateway.exited.then((code) => {
    state.exitedAt = performance.now();
    return code;
  });
  await waitFor(
    'the invocation to be in flight at the gateway',
    async () => ((await (await fetch(gateway.metricsUrl)).text()).includes('kruntimes_gateway_inflight_requests 1') ? true : undefined),
    { timeoutMs: 10_000, intervalMs: 20 },
  );
  process.kill(gateway.pid, 'SIGTERM');
  // Not ready at once, on a listener still open (the shutdown delay is 8 s).
  await waitFor(
    'the gateway to answer not ready',
    async () => ((await call(`${gateway.url}/readyz`, { ca: gateway.caPem, method: 'GET' })).status === 503 ? true : undefined),
    { timeoutMs: 10_000, intervalMs: 50 },
  );
  // Within the delay: a new connection is accepted and its invoke answered (and told to close).
  const during = await system.invoke({ runtime: 'py', uid: uidOf(python), token, body: '{"n":2}' });
  expect({ status: during.status, connection: during.headers.connection }).toEqual({ status: 200, connection: 'close' });
  expect(during.json).toMatchObject({ result: { echo: { n: 2 } } });
  // After the delay: new connections are refused.
  await waitFor(
    'new connections to be refused',
    async () => {
      try {
        await system.invoke({ runtime: 'py', uid: uidOf(python), token });
        return undefined;
      } catch (error) {
        return (error as { code?: string }).code === 'ECONNREFUSED' ? true : undefined;
      }
    },
    { timeoutMs: 30_000, intervalMs: 50 },
  );
  // The invocation in flight still gets its body through and its answer.
  held.end(body.slice(-1));
  const answer = await inflight;
  expect(answer.status).toBe(200);
  expect(JSON.parse(answer.body)).toMatchObject({ invocationId: 'drained', result: { echo: { sleep: 1 } } });
  const code = await exited;
  // Why it did not exit 0, shown with the code since the log goes with the test's directory: the
  // log's end, which holds a failed shutdown's "shutdown failed" line or an uncaught error's stack.
  const failure = code === 0 ? '' : (await readFile(gateway.logFile, 'utf8')).split('\n').slice(-40);
  expect({ code, failure }).toEqual({ code: 0, failure: '' });
  expect(state.answeredAt).toBeLessThanOrEqual(state.exitedAt);
});

// Last: after every other test of this file sent tokens through every component.
test('no log line of any component contains any token', async () => {
  const logs = await system.logs();
  expect(logs.some(({ file }) => file.endsWith('gateway.log'))).toBe(true);
  expect(logs.some(({ file }) => file.endsWith('runtimed.log'))).toBe(true);
  expect(logs.some(({ file }) => file.endsWith('runtime-server.log'))).toBe(true);
  const secrets = await system.secrets();
  // The users' three, the in-process components' and the gateway's, and each Pod's runtimed token.
  expect(secrets.length).toBeGreaterThanOrEqual(3 + 3 + 2);
  const leaks = await system.logLinesContaining(secrets);
  expect(leaks.map(({ file }) => file)).toEqual([]);
});
