import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { request } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testCa, testServerCert, waitFor } from '@kruntimes/testing';

// The gateway's main as a real process: its flags, how it fails to start, and SIGTERM.
// It resolves upstreams by DNS here; the one invoke it is sent names a Runtime no DNS knows.
const main = join(import.meta.dirname, '..', 'src', 'main.ts');
const STOP_BOUND_MS = 30_000;
const WAIT = { timeoutMs: 15_000, intervalMs: 50 };

interface Ended {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface Started {
  /** Resolves with the first log line whose msg is `message`. */
  logged(message: string): Promise<Record<string, unknown>>;
  signal(signal: NodeJS.Signals): void;
  ended: Promise<Ended>;
}

function start(args: string[]): Started {
  const child = spawn(process.execPath, [main, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, KRT_LOG_LEVEL: 'info' },
  });
  let stdout = '';
  let stderr = '';
  const waiting: { message: string; resolve: (line: Record<string, unknown>) => void }[] = [];
  const scan = (): void => {
    for (const text of stdout.split('\n')) {
      if (!text.startsWith('{')) continue;
      const line = JSON.parse(text) as Record<string, unknown>;
      for (const waiter of waiting.filter((w) => w.message === line.msg)) {
        waiting.splice(waiting.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  };
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
    scan();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_BOUND_MS);
  const ended = once(child, 'exit').then(([code]) => {
    clearTimeout(timer);
    return { code: code as number | null, stdout, stderr };
  });
  return {
    logged: (message) =>
      new Promise((resolve, reject) => {
        waiting.push({ message, resolve });
        scan();
        void ended.then(() => {
          reject(new Error(`the gateway exited without logging ${JSON.stringify(message)}:\n${stdout}${stderr}`));
        });
      }),
    signal: (signal) => child.kill(signal),
    ended,
  };
}

function fatal(ended: Ended): string {
  const line = ended.stdout
    .split('\n')
    .filter((text) => text.startsWith('{'))
    .map((text) => JSON.parse(text) as { msg: string; err?: { message: string } })
    .find((entry) => entry.msg === 'runtime-gateway failed to start');
  return line?.err?.message ?? `(no fatal line) ${ended.stdout}${ended.stderr}`;
}

let dir: string;
let tls: string[];
let caPem: string;

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Reads the answer to a request, whole. */
async function answerOf(sent: ClientRequest): Promise<Answer> {
  const [response] = (await once(sent, 'response')) as [IncomingMessage];
  let body = '';
  for await (const chunk of response) body += (chunk as Buffer).toString('utf8');
  return { status: response.statusCode ?? 0, headers: response.headers, body };
}

/** A request of its own connection (no agent: never a reused keep-alive socket). */
function open(port: number, method: string, path: string, headers: Record<string, string> = {}): ClientRequest {
  return request({ host: '127.0.0.1', port, method, path, headers, ca: caPem, agent: false });
}

/** A GET on a new connection; ECONNREFUSED and other socket errors reject. */
function get(port: number, path: string): Promise<Answer> {
  const sent = open(port, 'GET', path);
  sent.end();
  return answerOf(sent);
}

/** Whether a TCP connection to the port is refused (else it is closed again at once). */
async function refused(port: number): Promise<boolean> {
  const socket = connect(port, '127.0.0.1');
  const [event] = await Promise.race([once(socket, 'connect').then(() => ['connect']), once(socket, 'error')]);
  socket.destroy();
  return (event as NodeJS.ErrnoException | string) !== 'connect' && (event as NodeJS.ErrnoException).code === 'ECONNREFUSED';
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gateway-main-'));
  const ca = await testCa();
  const serving = await testServerCert(ca, { ips: ['127.0.0.1'] });
  await writeFile(join(dir, 'tls.crt'), serving.certPem);
  await writeFile(join(dir, 'tls.key'), serving.keyPem);
  await writeFile(join(dir, 'ca.crt'), ca.certPem);
  caPem = ca.certPem;
  tls = ['--tls-cert-file', join(dir, 'tls.crt'), '--tls-key-file', join(dir, 'tls.key'), '--runtimed-ca-file', join(dir, 'ca.crt')];
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('flags', () => {
  test('an unknown flag: a usage error on stderr, exit 2, no stack trace', async () => {
    const ended = await start(['--bogus']).ended;
    expect(ended.code).toBe(2);
    expect(ended.stderr).toBe("runtime-gateway: Unknown option '--bogus'\n");
  });

  test.each([
    ['--listen without a port', ['--listen', 'localhost'], '--listen must be HOST:PORT, not "localhost"'],
    ['--listen with a port out of range', ['--listen', '127.0.0.1:70000'], '--listen must be HOST:PORT, not "127.0.0.1:70000"'],
    ['--resolve of an unknown kind', ['--resolve', 'consul'], '--resolve must be endpointslices, dns or endpoints, not "consul"'],
    ['--drain-seconds that is not a number', ['--drain-seconds', 'soon'], '--drain-seconds must be a number of seconds'],
    ['--shutdown-delay-seconds below 0', ['--shutdown-delay-seconds=-1'], '--shutdown-delay-seconds must be a number of seconds'],
    ['--metrics-address without a port', ['--metrics-address', 'x'], '--metrics-address must be HOST:PORT, not "x"'],
  ])('%s: a fatal log line that says so, exit 1', async (_, args, message) => {
    const ended = await start([...tls, '--listen', '127.0.0.1:0', ...args]).ended;
    expect(ended.code).toBe(1);
    expect(fatal(ended)).toBe(message);
  });

  test.each(['tls-cert-file', 'tls-key-file', 'runtimed-ca-file'])('--%s missing: exit 1', async (flag) => {
    const args = [...tls];
    args.splice(args.indexOf(`--${flag}`), 2);
    const ended = await start([...args, '--listen', '127.0.0.1:0']).ended;
    expect(ended.code).toBe(1);
    expect(fatal(ended)).toBe(`--${flag} is required`);
  });

  test('a certificate file that does not exist: exit 1, the path named', async () => {
    const args = [...tls];
    args[args.indexOf('--tls-cert-file') + 1] = join(dir, 'missing.crt');
    const ended = await start([...args, '--listen', '127.0.0.1:0']).ended;
    expect(ended.code).toBe(1);
    expect(fatal(ended)).toContain(join(dir, 'missing.crt'));
  });
});

describe('SIGTERM', () => {
  test('not ready at once, still serving new connections for the shutdown delay, then refusing them while the request in flight finishes', async () => {
    // A delay long enough for every step "within the delay" on a busy machine; the steps wait on log lines, never on time.
    const gateway = start([...tls, '--listen', '127.0.0.1:0', '--metrics-address', '127.0.0.1:0', '--shutdown-delay-seconds', '8']);
    const metrics = (await gateway.logged('metrics listening (plaintext, no credentials accepted)')).address as { port: number };
    const { port } = (await gateway.logged('gateway listening (HTTPS)')).address as { port: number };
    expect((await get(port, '/readyz')).status).toBe(200);
    // An invoke in flight: its headers are in, its body is not (it waits on the rest).
    const inflight = open(port, 'POST', `/v1/namespaces/ns/runtimes/rt/functions/${randomUUID()}:invoke`, {
      authorization: 'Bearer t0k3n',
      'content-type': 'application/json',
      'content-length': '2',
    });
    inflight.write('{');
    const answered = answerOf(inflight);
    // Awaited below; a failure before then must fail the test, not the worker.
    answered.catch(() => undefined);
    await waitFor(
      'the invoke to be in flight',
      async () =>
        (await (await fetch(`http://127.0.0.1:${String(metrics.port)}/metrics`)).text()).includes('kruntimes_gateway_inflight_requests 1')
          ? true
          : undefined,
      WAIT,
    );

    gateway.signal('SIGTERM');
    expect(await gateway.logged('shutdown delay: not ready, still accepting new connections')).toMatchObject({ delaySeconds: 8 });
    // Within the delay: readiness fails, and new connections are accepted and served (each told to close).
    const readiness = await get(port, '/readyz');
    expect({ status: readiness.status, connection: readiness.headers.connection }).toEqual({ status: 503, connection: 'close' });
    const served = await get(port, '/v1/elsewhere');
    expect({ status: served.status, connection: served.headers.connection }).toEqual({ status: 404, connection: 'close' });
    expect(JSON.parse(served.body)).toMatchObject({ error: { code: 'RouteNotFound' } });

    // After the delay: new connections are refused; the invoke in flight still gets its answer.
    expect(await gateway.logged('listener closed; draining in-flight requests')).toMatchObject({ inflight: 1 });
    expect(await waitFor('new connections to be refused', async () => ((await refused(port)) ? true : undefined), WAIT)).toBe(true);
    inflight.end('}');
    const answer = await answered;
    // The Runtime is unknown to DNS: an answer of the error table, not a reset connection.
    expect(answer.headers.connection).toBe('close');
    expect(JSON.parse(answer.body)).toMatchObject({ error: { source: 'platform' } });
    await gateway.logged('gateway stopped');
    expect((await gateway.ended).code).toBe(0);
  });

  test('SIGINT stops at once: no shutdown delay', async () => {
    const gateway = start([...tls, '--listen', '127.0.0.1:0', '--shutdown-delay-seconds', '600']);
    await gateway.logged('gateway listening (HTTPS)');
    gateway.signal('SIGINT');
    await gateway.logged('listener closed; draining in-flight requests');
    const ended = await gateway.ended;
    expect(ended.code).toBe(0);
    expect(ended.stdout).not.toContain('shutdown delay');
  });

  test('drains, closes its listeners and exits 0', async () => {
    const gateway = start([...tls, '--listen', '127.0.0.1:0', '--metrics-address', '127.0.0.1:0', '--drain-seconds', '5']);
    const listening = await gateway.logged('gateway listening (HTTPS)');
    const { port } = listening.address as { port: number };
    gateway.signal('SIGTERM');
    await gateway.logged('listener closed; draining in-flight requests');
    const ended = await gateway.ended;
    expect(ended.code).toBe(0);
    // Nothing listens on its port any more.
    const socket = connect(port, '127.0.0.1');
    const [error] = (await once(socket, 'error')) as [NodeJS.ErrnoException];
    expect(error.code).toBe('ECONNREFUSED');
  });
});
