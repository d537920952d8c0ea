import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { durationFromMillis, runtimeServerV1 } from '@kruntimes/proto';
import { Status } from 'nice-grpc';
import { failure, startServerProcess, survivingProcesses } from '@kruntimes/testing';
import type { ServerProcess } from '@kruntimes/testing';

const { ExitReason, LogStream } = runtimeServerV1;
const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts');
const parse = (bytes: Uint8Array): unknown => JSON.parse(Buffer.from(bytes).toString('utf8'));

const SCRIPT = `
echo_json() { payload=$(cat); printf '{"payload":%s,"id":"%s"}' "$payload" "$KRT_INVOCATION_ID"; printf 'v1' > "$KRT_OUTPUTS_DIR/out"; }
text() { echo "plain text"; }
fail() { echo "bad things" >&2; return 3; }
slow() { sleep 60; }
noisy() { head -c 10485760 /dev/zero | tr '\\\\0' x >&2; echo '"ok"'; }
`;

const TASK = `
echo "task $1"
echo "err line" >&2
printf '{"answer":"42"}' > "$KRT_OUTPUTS_FILE"
exit 4
`;

const SPAWNER = `
sleep 300 &
first=$!
( sleep 300 ) &
echo "$first $! $$" > "$1"
echo "children started"
wait
`;

describe('runtime-server-bash', () => {
  let server: ServerProcess;
  let workdir: string;

  beforeAll(async () => {
    workdir = mkdtempSync(join(tmpdir(), 'krt-sh-'));
    writeFileSync(join(workdir, 'main.sh'), SCRIPT);
    writeFileSync(join(workdir, 'task.sh'), TASK);
    writeFileSync(join(workdir, 'spawner.sh'), SPAWNER);
    server = await startServerProcess(MAIN);
  });

  afterAll(async () => {
    await server.stop();
    rmSync(workdir, { recursive: true, force: true });
  });

  const register = (handler: string, attempt = 1, runUid: string = randomUUID()) =>
    server.client.registerFunction({ runUid, attempt, workdir, handler, env: {} });
  const invokeRequest = (registrationId: string, payload: unknown, timeoutMs = 10_000) => ({
    registrationId,
    invocationId: randomUUID(),
    payload: Buffer.from(JSON.stringify(payload)),
    timeout: durationFromMillis(timeoutMs),
  });

  it('registers, invokes with payload on stdin and outputs as files, and unregisters', async () => {
    const run = randomUUID();
    const { registrationId } = await register('echo_json', 1, run);
    expect((await register('echo_json', 1, run)).registrationId).toBe(registrationId);
    expect(
      await failure((o) => server.client.registerFunction({ runUid: run, attempt: 1, workdir, handler: 'text', env: {} }, o)),
    ).toMatchObject({
      code: 'RegistrationConflict',
    });
    const request = invokeRequest(registrationId, { a: 1 });
    const response = await server.client.invokeFunction(request);
    expect(parse(response.result)).toEqual({ payload: { a: 1 }, id: request.invocationId });
    expect(response.outputs).toEqual({ out: 'v1' });
    expect(
      await failure((o) => server.client.registerFunction({ runUid: randomUUID(), attempt: 1, workdir, handler: 'missing', env: {} }, o)),
    ).toMatchObject({
      code: 'FunctionFailed',
    });
    expect(await server.client.unregisterFunction({ registrationId })).toEqual({ found: true });
  });

  it('maps text results, errors, timeouts, overlap and output bounds', async () => {
    const text = await register('text');
    expect(parse((await server.client.invokeFunction(invokeRequest(text.registrationId, null))).result)).toBe('plain text');

    const fail = await register('fail');
    const failed = await failure((o) => server.client.invokeFunction(invokeRequest(fail.registrationId, null), o));
    expect(failed).toMatchObject({ status: Status.UNKNOWN, code: 'FunctionFailed', source: 'function' });
    expect(failed.message).toContain('bad things');

    const slow = await register('slow');
    const pending = failure((o) => server.client.invokeFunction(invokeRequest(slow.registrationId, null, 1000), o));
    for (let i = 0; i < 100 && (await server.client.functionStatus(slow)).inFlight === 0; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const overlap = await failure((o) => server.client.invokeFunction(invokeRequest(slow.registrationId, null), o));
    expect(overlap).toMatchObject({ status: Status.RESOURCE_EXHAUSTED, code: 'InvocationInFlight' });
    expect(await pending).toMatchObject({ status: Status.DEADLINE_EXCEEDED, code: 'InvocationTimeout' });

    const noisy = await register('noisy');
    const response = await server.client.invokeFunction(invokeRequest(noisy.registrationId, null));
    expect(parse(response.result)).toBe('ok');
    expect(response.stderr).toMatchObject({ truncated: true, totalBytes: 10 * 1024 * 1024 });
    expect(response.stderr!.data).toHaveLength(64 * 1024);
  });

  it('executes a task with logs, exit status and outputs, and cancels a spawning one completely', async () => {
    const events: runtimeServerV1.ExecuteEvent[] = [];
    for await (const event of server.client.execute({
      executionId: 'sh-1',
      runUid: randomUUID(),
      attempt: 1,
      workdir,
      entrypoint: 'task.sh',
      args: ['A'],
      env: {},
    })) {
      events.push(event);
    }
    const logs = events.flatMap((e) => (e.event?.$case === 'log' ? [e.event.log] : []));
    expect(logs).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ stream: LogStream.LOG_STREAM_STDOUT, text: 'task A' }),
        expect.objectContaining({ stream: LogStream.LOG_STREAM_STDERR, text: 'err line' }),
      ]),
    );
    const last = events.at(-1)?.event;
    expect(last?.$case === 'exited' && last.exited).toMatchObject({
      reason: ExitReason.EXIT_REASON_COMPLETED,
      exitCode: 4,
      outputs: { answer: '42' },
    });

    const pidFile = join(workdir, 'pids.txt');
    let exited: runtimeServerV1.ExecutionExited | undefined;
    for await (const event of server.client.execute({
      executionId: 'sh-2',
      runUid: randomUUID(),
      attempt: 1,
      workdir,
      entrypoint: 'spawner.sh',
      args: [pidFile],
      env: {},
    })) {
      if (event.event?.$case === 'log' && event.event.log.text === 'children started') {
        await server.client.cancelExecution({ executionId: 'sh-2', gracePeriod: durationFromMillis(500) });
      }
      if (event.event?.$case === 'exited') exited = event.event.exited;
    }
    expect(exited?.reason).toBe(ExitReason.EXIT_REASON_CANCELLED);
    const pids = readFileSync(pidFile, 'utf8').trim().split(' ').map(Number);
    expect(pids).toHaveLength(3);
    // Reported only once no process of the group is left: none may be alive at this moment.
    expect(await survivingProcesses(pids, 0)).toEqual([]);
  });

  it('serves on a unix socket', async () => {
    const socketDir = mkdtempSync(join(tmpdir(), 'krt-sock-'));
    const onSocket = await startServerProcess(MAIN, {}, `unix:${join(socketDir, 'runtime-server.sock')}`);
    try {
      const { registrationId } = await onSocket.client.registerFunction({
        runUid: randomUUID(),
        attempt: 1,
        workdir,
        handler: 'text',
        env: {},
      });
      expect(parse((await onSocket.client.invokeFunction(invokeRequest(registrationId, null))).result)).toBe('plain text');
    } finally {
      await onSocket.stop();
      rmSync(socketDir, { recursive: true, force: true });
    }
  });
});
