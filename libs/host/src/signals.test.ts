import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** A process that stops on signals: its stop takes a while, and fails when asked to. */
const SERVICE = `
import { stopOnSignals } from ${JSON.stringify(pathToFileURL(join(import.meta.dirname, 'signals.ts')).href)};
const print = (line) => console.log(JSON.stringify(line));
const logger = { info: (object, msg) => print({ ...object, msg }), error: (object, msg) => print({ err: object.err.message, msg }) };
const keepAlive = setInterval(() => undefined, 1000);
let calls = 0;
const stopped = stopOnSignals(logger, async (signal) => {
  calls += 1;
  print({ stop: signal });
  // Long enough for the test's second signal to arrive while stopping.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  clearInterval(keepAlive);
  if (process.env.FAIL === '1') throw new Error('boom');
});
print({ ready: true });
const code = await stopped;
print({ calls, code });
process.exit(code);
`;

/** Starts SERVICE, sends `signals` (each after the previous one was seen), returns its lines and exit code. */
async function signalService(
  signals: NodeJS.Signals[],
  env: Record<string, string> = {},
): Promise<{ lines: object[]; code: number | null }> {
  const child = spawn(process.execPath, ['--input-type=module', '--eval', SERVICE], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: object[] = [];
  let seen = 0;
  const exited = once(child, 'exit');
  child.stdout.setEncoding('utf8');
  let buffered = '';
  child.stdout.on('data', (chunk: string) => {
    buffered += chunk;
    for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
      lines.push(JSON.parse(buffered.slice(0, end)) as object);
      buffered = buffered.slice(end + 1);
    }
  });
  const timeout = setTimeout(() => child.kill('SIGKILL'), 10_000);
  try {
    // Each step waits (bounded) for the line the previous one causes: first "ready", the listeners are in place.
    for (let i = 0; i < 250 && lines.length === 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
    seen = 1;
    for (const signal of signals) {
      child.kill(signal);
      seen += 1;
      for (let i = 0; i < 250 && lines.length < seen; i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const [code] = (await exited) as [number | null];
    return { lines, code };
  } finally {
    clearTimeout(timeout);
  }
}

describe('stopOnSignals', () => {
  it('stops once on the first signal, ignores a second, and resolves 0', async () => {
    const { lines, code } = await signalService(['SIGTERM', 'SIGINT']);
    expect(lines).toEqual([
      { ready: true },
      { signal: 'SIGTERM', msg: 'shutting down' },
      { stop: 'SIGTERM' },
      { signal: 'SIGINT', msg: 'already shutting down' },
      { calls: 1, code: 0 },
    ]);
    expect(code).toBe(0);
  });

  it('resolves 1 when stop fails, and logs why', async () => {
    const { lines, code } = await signalService(['SIGINT'], { FAIL: '1' });
    expect(lines).toEqual([
      { ready: true },
      { signal: 'SIGINT', msg: 'shutting down' },
      { stop: 'SIGINT' },
      { err: 'boom', msg: 'shutdown failed' },
      { calls: 1, code: 1 },
    ]);
    expect(code).toBe(1);
  });
});
