import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DevError } from './dev-components.ts';
import type { Running } from './dev-components.ts';
import { PortTaken, bindFailureLine, exitError, startOnFreshPorts } from './dev-ports.ts';

test.each([
  ['Jaeger', '{"level":"fatal","msg":"listen tcp 127.0.0.1:37973: bind: address already in use"}', true],
  ['Prometheus', 'level=ERROR msg="Unable to start web listener" err="listen tcp 127.0.0.1:9090: bind: Address already in use"', true],
  ['weed', 'F1207 listen tcp 127.0.0.1:8333: bind: address already in use', true],
  ['another failure', 'panic: invalid configuration', false],
])('a bind failure in the log of %s is found: %s', (_name, line, found) => {
  expect(bindFailureLine(`starting\n${line}\nexiting\n`)).toBe(found ? line : undefined);
});

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dev-ports-test-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function exited(log: string, logStart: number): Running {
  return { name: 'jaeger', pid: 1, log, logStart, exitCode: 1, exitSignal: null, exited: Promise.resolve(1) };
}

test('an exit is PortTaken only when the log since this start says a bind failed', async () => {
  const log = join(dir, 'jaeger.log');
  const earlier = 'listen tcp 127.0.0.1:1: bind: address already in use\n';
  await writeFile(log, `${earlier}started\nready\n`);
  const other = await exitError(exited(log, earlier.length));
  expect(other).toBeInstanceOf(DevError);
  expect(other).not.toBeInstanceOf(PortTaken);
  expect(other.message).toBe(`jaeger exited (exit code 1); see ${log}`);
  const taken = await exitError(exited(log, 0));
  expect(taken).toBeInstanceOf(PortTaken);
  expect(taken.message).toBe(
    'jaeger exited (exit code 1): a port it was given was taken: listen tcp 127.0.0.1:1: bind: address already in use',
  );
});

test('a start is made again only after PortTaken, at most three times, each said', async () => {
  const said: string[] = [];
  let calls = 0;
  const up = await startOnFreshPorts(
    (line) => said.push(line),
    () => (++calls < 3 ? Promise.reject(new PortTaken(`port ${String(calls)} taken`)) : Promise.resolve('up')),
  );
  expect({ up, calls }).toEqual({ up: 'up', calls: 3 });
  expect(said).toEqual([
    'port 1 taken; starting it again on new ports (start 2 of 3)',
    'port 2 taken; starting it again on new ports (start 3 of 3)',
  ]);
  calls = 0;
  await expect(
    startOnFreshPorts(
      () => undefined,
      () => Promise.reject(new PortTaken(`taken ${String(++calls)}`)),
    ),
  ).rejects.toThrow('taken 3');
  calls = 0;
  await expect(
    startOnFreshPorts(
      () => undefined,
      () => Promise.reject(new DevError(`broken ${String(++calls)}`)),
    ),
  ).rejects.toThrow('broken 1');
});
