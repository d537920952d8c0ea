import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testCa, testServerCert } from '@kruntimes/testing';

// The gateway's main as a real process: its flags, how it fails to start, and SIGTERM.
// It resolves upstreams by DNS here and is never sent an invoke, so it dials nothing.
const main = join(import.meta.dirname, '..', 'src', 'main.ts');
const STOP_BOUND_MS = 20_000;

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

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gateway-main-'));
  const ca = await testCa();
  const serving = await testServerCert(ca, { ips: ['127.0.0.1'] });
  await writeFile(join(dir, 'tls.crt'), serving.certPem);
  await writeFile(join(dir, 'tls.key'), serving.keyPem);
  await writeFile(join(dir, 'ca.crt'), ca.certPem);
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
  test('drains, closes its listeners and exits 0', async () => {
    const gateway = start([...tls, '--listen', '127.0.0.1:0', '--metrics-address', '127.0.0.1:0', '--drain-seconds', '5']);
    const listening = await gateway.logged('gateway listening (HTTPS)');
    const { port } = listening.address as { port: number };
    gateway.signal('SIGTERM');
    await gateway.logged('draining in-flight requests');
    const ended = await gateway.ended;
    expect(ended.code).toBe(0);
    // Nothing listens on its port any more.
    const socket = connect(port, '127.0.0.1');
    const [error] = (await once(socket, 'error')) as [NodeJS.ErrnoException];
    expect(error.code).toBe('ECONNREFUSED');
  });
});
