import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { durationFromMillis, runtimeServerV1 } from '@kruntimes/proto';
import { Status } from 'nice-grpc';
import { failure, startServerProcess, survivingProcesses } from '@kruntimes/testing';
import type { ServerProcess } from '@kruntimes/testing';

const { ExitReason, LogStream, RegistrationState } = runtimeServerV1;
const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts');
const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const parse = (bytes: Uint8Array): unknown => JSON.parse(Buffer.from(bytes).toString('utf8'));

const HANDLERS = `
import os, sys, time
with open("imports.log", "a") as f:
    f.write("imported\\n")
calls = 0

def count(event, context):
    global calls
    calls += 1
    context.set_output("invocation", context.invocation_id)
    return {"calls": calls, "echo": event, "remaining": context.remaining_time() > 0}

def sleep(event, context):
    time.sleep(event["seconds"])
    return "slept"

def fail(event, context):
    print("about to fail")
    raise ValueError("handler says no")

def flood(event, context):
    sys.stdout.write("x" * (10 * 1024 * 1024))
    return "flooded"

def huge(event, context):
    return "y" * (2 * 1024 * 1024)

def crash(event, context):
    os._exit(9)

def pid(event, context):
    return os.getpid()

def spawn(event, context):
    import subprocess
    children = [subprocess.Popen(["sleep", "300"]) for _ in range(2)]
    with open(event["pid_file"], "w") as f:
        f.write(" ".join([str(c.pid) for c in children] + [str(os.getpid())]))
    time.sleep(event["seconds"])
    return "spawned"
`;

const TASK = `
import json, os, sys
print("hello from task", sys.argv[1])
print("to stderr", file=sys.stderr)
print("z" * 40000)
with open(os.environ["KRT_OUTPUTS_FILE"], "w") as f:
    json.dump({"answer": "42"}, f)
sys.exit(3)
`;

const WHERE = `
import os, sys, krt
def where(event, context):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {"cwd": os.getcwd(), "env": env, "path": sys.path, "groupLeader": os.getpgid(0) == os.getpid(), "helper": krt.__name__}
`;

const SPAWNING_TASK = `
import os, subprocess, sys, time
children = [subprocess.Popen(["sleep", "300"]) for _ in range(2)]
with open(sys.argv[1], "w") as f:
    f.write(" ".join([str(c.pid) for c in children] + [str(os.getpid())]))
print("children started", flush=True)
time.sleep(300)
`;

describe('runtime-server-python', () => {
  let server: ServerProcess;
  let workdir: string;

  beforeAll(async () => {
    workdir = mkdtempSync(join(tmpdir(), 'krt-py-'));
    writeFileSync(join(workdir, 'handlers.py'), HANDLERS);
    writeFileSync(join(workdir, 'task.py'), TASK);
    writeFileSync(join(workdir, 'spawner.py'), SPAWNING_TASK);
    writeFileSync(join(workdir, 'where.py'), WHERE);
    server = await startServerProcess(MAIN);
  });

  afterAll(async () => {
    await server.stop();
    rmSync(workdir, { recursive: true, force: true });
  });

  const register = (runUid: string, attempt: number, handler: string, env: Record<string, string> = {}) =>
    server.client.registerFunction({ runUid, attempt, workdir, handler, env });
  const invoke = (registrationId: string, payload: unknown, timeoutMs = 10_000, invocationId: string = randomUUID()) =>
    server.client.invokeFunction({ registrationId, invocationId, payload: json(payload), timeout: durationFromMillis(timeoutMs) });

  it('applies every registration rule', async () => {
    const run = randomUUID();
    const first = await register(run, 1, 'handlers:count');
    expect(first.created).toBe(true);
    expect(await register(run, 1, 'handlers:count')).toEqual({ registrationId: first.registrationId, created: false });

    const conflict = await failure((o) =>
      server.client.registerFunction({ runUid: run, attempt: 1, workdir, handler: 'handlers:sleep', env: {} }, o),
    );
    expect(conflict).toMatchObject({ status: Status.ALREADY_EXISTS, code: 'RegistrationConflict', source: 'platform' });

    const second = await register(run, 2, 'handlers:count');
    expect(second.registrationId).not.toBe(first.registrationId);
    const old = await failure((o) => server.client.functionStatus({ registrationId: first.registrationId }, o));
    expect(old).toMatchObject({ status: Status.NOT_FOUND, code: 'RegistrationNotFound' });
    const oldInvoke = await failure((o) =>
      server.client.invokeFunction(
        { registrationId: first.registrationId, invocationId: 'i-1', payload: json(1), timeout: durationFromMillis(1000) },
        o,
      ),
    );
    expect(oldInvoke.code).toBe('RegistrationNotFound');

    const stale = await failure((o) =>
      server.client.registerFunction({ runUid: run, attempt: 1, workdir, handler: 'handlers:count', env: {} }, o),
    );
    expect(stale).toMatchObject({ status: Status.FAILED_PRECONDITION, code: 'StaleAttempt' });

    expect(await server.client.unregisterFunction({ registrationId: second.registrationId })).toEqual({ found: true });
    expect(await server.client.unregisterFunction({ registrationId: second.registrationId })).toEqual({ found: false });
    expect(await server.client.unregisterFunction({ registrationId: 'never-existed' })).toEqual({ found: false });

    const missing = await failure((o) =>
      server.client.registerFunction({ runUid: randomUUID(), attempt: 1, workdir, handler: 'handlers:nope', env: {} }, o),
    );
    expect(missing).toMatchObject({ status: Status.UNKNOWN, code: 'FunctionFailed', source: 'function' });
    expect(missing.message).toContain('no function');
  });

  it('a worker started ahead (spare) gets the same working directory, environment and sys.path as one started cold', async () => {
    const where = async (env: Record<string, string>) => {
      const run = randomUUID();
      const { registrationId } = await register(run, 1, 'where:where', env);
      const answer = parse((await invoke(registrationId, null)).result) as { env: Record<string, string> };
      await server.client.unregisterFunction({ registrationId });
      expect(answer.env.KRT_RUN_UID).toBe(run);
      delete answer.env.KRT_RUN_UID;
      return answer;
    };
    const env = { MY_SETTING: 'on', PYTHONPATH: 'lib:/opt/extra' };
    const spare = await where(env);
    // A PYTHON* variable other than PYTHONPATH is read at interpreter start: that registration starts cold.
    const cold = await where({ ...env, PYTHONDONTWRITEBYTECODE: '1' });
    expect(spare).toEqual(cold);
    expect(spare).toMatchObject({ cwd: workdir, groupLeader: true, helper: 'krt', env: { MY_SETTING: 'on' } });
    expect((spare as unknown as { path: string[] }).path).toEqual(expect.arrayContaining([join(workdir, 'lib'), '/opt/extra']));
  });

  it('imports the module once and keeps it warm across invocations', async () => {
    const run = randomUUID();
    const { registrationId } = await register(run, 1, 'handlers:count');
    const before = readFileSync(join(workdir, 'imports.log'), 'utf8').split('\n').length;
    let last: unknown;
    for (let i = 0; i < 20; i += 1) {
      const response = await invoke(registrationId, { i }, 10_000, `inv-${i}`);
      last = parse(response.result);
      expect(response.outputs).toEqual({ invocation: `inv-${i}` });
    }
    expect(last).toEqual({ calls: 20, echo: { i: 19 }, remaining: true });
    expect(readFileSync(join(workdir, 'imports.log'), 'utf8').split('\n').length).toBe(before);
    const status = await server.client.functionStatus({ registrationId });
    expect(status).toMatchObject({ state: RegistrationState.REGISTRATION_STATE_READY, inFlight: 0, invocations: 20, restarts: 0 });
    expect(status.lastActivity!.getTime()).toBeGreaterThanOrEqual(status.registeredAt!.getTime());
    await server.client.unregisterFunction({ registrationId });
  });

  it('runs exactly one of two overlapping invocations; the other is RESOURCE_EXHAUSTED', async () => {
    const { registrationId } = await register(randomUUID(), 1, 'handlers:sleep');
    const results = await Promise.allSettled([invoke(registrationId, { seconds: 1 }), invoke(registrationId, { seconds: 1 })]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.find((r) => r.status === 'rejected');
    expect(rejected).toBeDefined();
    const overlapping = await failure(async (o) => {
      const slow = invoke(registrationId, { seconds: 1 });
      try {
        // Wait (bounded) until the first one is visibly in flight, then overlap it.
        for (let i = 0; i < 100 && (await server.client.functionStatus({ registrationId })).inFlight === 0; i += 1) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        await server.client.invokeFunction(
          { registrationId, invocationId: 'overlap', payload: json({ seconds: 0 }), timeout: durationFromMillis(5000) },
          o,
        );
      } finally {
        await slow;
      }
    });
    expect(overlapping).toMatchObject({ status: Status.RESOURCE_EXHAUSTED, code: 'InvocationInFlight' });
    await server.client.unregisterFunction({ registrationId });
  });

  it('kills a handler that sleeps past its timeout and serves the next invocation', async () => {
    const { registrationId } = await register(randomUUID(), 1, 'handlers:sleep');
    const timedOut = await failure((o) =>
      server.client.invokeFunction(
        { registrationId, invocationId: 't-1', payload: json({ seconds: 60 }), timeout: durationFromMillis(500) },
        o,
      ),
    );
    expect(timedOut).toMatchObject({ status: Status.DEADLINE_EXCEEDED, code: 'InvocationTimeout' });
    expect(parse((await invoke(registrationId, { seconds: 0 })).result)).toBe('slept');
    expect(await server.client.functionStatus({ registrationId })).toMatchObject({
      state: RegistrationState.REGISTRATION_STATE_READY,
      restarts: 1,
      invocations: 2,
    });
    await server.client.unregisterFunction({ registrationId });
  });

  it('answers a timeout, and unregisters, only once no process of the worker is left', async () => {
    const { registrationId } = await register(randomUUID(), 1, 'handlers:spawn');
    const timeoutPids = join(workdir, 'timeout-pids');
    const timedOut = await failure((o) =>
      server.client.invokeFunction(
        {
          registrationId,
          invocationId: 'spawn-1',
          payload: json({ pid_file: timeoutPids, seconds: 60 }),
          timeout: durationFromMillis(1_000),
        },
        o,
      ),
    );
    expect(timedOut).toMatchObject({ status: Status.DEADLINE_EXCEEDED, code: 'InvocationTimeout' });
    expect(await survivingProcesses(readFileSync(timeoutPids, 'utf8').split(' ').map(Number), 0)).toEqual([]);

    const unregisterPids = join(workdir, 'unregister-pids');
    expect(parse((await invoke(registrationId, { pid_file: unregisterPids, seconds: 0 })).result)).toBe('spawned');
    const pids = readFileSync(unregisterPids, 'utf8').split(' ').map(Number);
    expect(await survivingProcesses(pids, 0)).toEqual(pids);
    expect(await server.client.unregisterFunction({ registrationId })).toEqual({ found: true });
    expect(await survivingProcesses(pids, 0)).toEqual([]);
  });

  it('reports handler errors, bounds output and results, and stays healthy', async () => {
    const run = randomUUID();
    const failed = await register(run, 1, 'handlers:fail');
    const raised = await failure((o) =>
      server.client.invokeFunction(
        { registrationId: failed.registrationId, invocationId: 'f-1', payload: json(null), timeout: durationFromMillis(5000) },
        o,
      ),
    );
    expect(raised).toMatchObject({ status: Status.UNKNOWN, code: 'FunctionFailed', source: 'function' });
    expect(raised.message).toContain('ValueError: handler says no');

    const flood = await register(randomUUID(), 1, 'handlers:flood');
    const flooded = await invoke(flood.registrationId, null);
    expect(parse(flooded.result)).toBe('flooded');
    expect(flooded.stdout).toMatchObject({ truncated: true, totalBytes: 10 * 1024 * 1024 });
    expect(flooded.stdout!.data).toHaveLength(64 * 1024);

    const huge = await register(randomUUID(), 1, 'handlers:huge');
    const tooLarge = await failure((o) =>
      server.client.invokeFunction(
        { registrationId: huge.registrationId, invocationId: 'h-1', payload: json(null), timeout: durationFromMillis(5000) },
        o,
      ),
    );
    expect(tooLarge).toMatchObject({ status: Status.UNKNOWN, code: 'FunctionOutputInvalid' });
    expect(tooLarge.message).toContain('at most 1048576');

    expect(parse((await invoke(flood.registrationId, null)).result)).toBe('flooded');
    for (const id of [failed, flood, huge]) await server.client.unregisterFunction(id);
  });

  it('reports a worker that dies as a fatal error; a higher attempt recovers', async () => {
    const run = randomUUID();
    const crashing = await register(run, 1, 'handlers:crash');
    const lost = await failure((o) =>
      server.client.invokeFunction(
        { registrationId: crashing.registrationId, invocationId: 'c-1', payload: json(null), timeout: durationFromMillis(5000) },
        o,
      ),
    );
    expect(lost).toMatchObject({ status: Status.UNAVAILABLE, code: 'RegistrationLost' });
    const status = await server.client.functionStatus({ registrationId: crashing.registrationId });
    expect(status.state).toBe(RegistrationState.REGISTRATION_STATE_FAILED);
    expect(status.fatalError).toMatchObject({ code: 'RegistrationLost', message: 'python worker exited (code 9)' });

    const recovered = await register(run, 2, 'handlers:pid');
    const workerPid = parse((await invoke(recovered.registrationId, null)).result) as number;
    // Killed from outside, too: the status says so.
    process.kill(workerPid, 'SIGKILL');
    let state = RegistrationState.REGISTRATION_STATE_READY as runtimeServerV1.RegistrationState;
    for (let i = 0; i < 100 && state !== RegistrationState.REGISTRATION_STATE_FAILED; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      state = (await server.client.functionStatus({ registrationId: recovered.registrationId })).state;
    }
    expect(state).toBe(RegistrationState.REGISTRATION_STATE_FAILED);
    await server.client.unregisterFunction({ registrationId: recovered.registrationId });
  });

  it('executes a task with streamed logs, exit status and outputs', async () => {
    const events: runtimeServerV1.ExecuteEvent[] = [];
    for await (const event of server.client.execute({
      executionId: 'task-1',
      runUid: randomUUID(),
      attempt: 1,
      workdir,
      entrypoint: 'task.py',
      args: ['arg1'],
      env: {},
    })) {
      events.push(event);
    }
    expect(events[0]?.event?.$case).toBe('started');
    const logs = events.flatMap((e) => (e.event?.$case === 'log' ? [e.event.log] : []));
    expect(logs).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ stream: LogStream.LOG_STREAM_STDOUT, text: 'hello from task arg1', truncated: false }),
        expect.objectContaining({ stream: LogStream.LOG_STREAM_STDERR, text: 'to stderr' }),
        expect.objectContaining({ stream: LogStream.LOG_STREAM_STDOUT, truncated: true }),
      ]),
    );
    const last = events.at(-1)?.event;
    expect(last?.$case === 'exited' && last.exited).toMatchObject({
      reason: ExitReason.EXIT_REASON_COMPLETED,
      exitCode: 3,
      outputs: { answer: '42' },
      outputsError: '',
    });
  });

  it('cancels a task and leaves none of its processes behind', async () => {
    const pidFile = join(workdir, 'pids.txt');
    const stream = server.client.execute({
      executionId: 'task-2',
      runUid: randomUUID(),
      attempt: 1,
      workdir,
      entrypoint: 'spawner.py',
      args: [pidFile],
      env: {},
    });
    let exited: runtimeServerV1.ExecutionExited | undefined;
    for await (const event of stream) {
      if (event.event?.$case === 'log' && event.event.log.text === 'children started') {
        expect(await server.client.cancelExecution({ executionId: 'task-2', gracePeriod: durationFromMillis(500) })).toEqual({
          found: true,
        });
      }
      if (event.event?.$case === 'exited') exited = event.event.exited;
    }
    expect(exited).toMatchObject({ reason: ExitReason.EXIT_REASON_CANCELLED, signal: 'SIGTERM', exitCode: -1 });
    const pids = readFileSync(pidFile, 'utf8').split(' ').map(Number);
    expect(pids).toHaveLength(3);
    // Reported only once no process of the group is left: none may be alive at this moment.
    expect(await survivingProcesses(pids, 0)).toEqual([]);
    expect(await server.client.cancelExecution({ executionId: 'task-2' })).toEqual({ found: false });
  });
});
