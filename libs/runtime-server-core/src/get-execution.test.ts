import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KruntimesError } from '@kruntimes/errors';
import { METADATA_KEYS, runtimeServerV1 } from '@kruntimes/proto';
import { ClientError, Metadata, Status, createChannel, createClient } from 'nice-grpc';
import type { Channel, Client } from 'nice-grpc';
import { pino } from 'pino';
import type { LanguageAdapter } from './adapter.ts';
import { startRuntimeServer } from './server.ts';
import type { RunningRuntimeServer } from './server.ts';

const { ExecutionState, ExitReason } = runtimeServerV1;

/** Tasks are `sh` scripts; functions are not needed here. */
const shAdapter: LanguageAdapter = {
  language: 'bash',
  prepare() {
    throw new KruntimesError('InvalidRequest', 'no functions in this test');
  },
  register() {
    return Promise.reject(new KruntimesError('InvalidRequest', 'no functions in this test'));
  },
  // KRT_TEST_INTERPRETER: a task whose interpreter the image lacks.
  taskCommand: (entrypoint, args, env) => ({ command: env.KRT_TEST_INTERPRETER ?? 'sh', args: [entrypoint, ...args] }),
};

let server: RunningRuntimeServer;
let channel: Channel;
let client: Client<runtimeServerV1.RuntimeServerDefinition>;
let workdir: string;

beforeAll(async () => {
  workdir = await mkdtemp(join(tmpdir(), 'krt-get-execution-'));
  await writeFile(join(workdir, 'exit7.sh'), 'echo working\nprintf \'{"k":"v"}\' > "$KRT_OUTPUTS_FILE"\nexit 7\n');
  await writeFile(join(workdir, 'wait.sh'), 'while [ ! -e "$1" ]; do sleep 0.05; done\nexit 4\n');
  await writeFile(join(workdir, 'sleep.sh'), 'exec sleep 300\n');
  server = await startRuntimeServer({ adapter: shAdapter, listen: '127.0.0.1:0', logger: pino({ level: 'silent' }) });
  channel = createChannel(`127.0.0.1:${String(server.port)}`);
  client = createClient(runtimeServerV1.RuntimeServerDefinition, channel);
});

afterAll(async () => {
  channel.close();
  await server.shutdown();
  await rm(workdir, { recursive: true, force: true });
});

const request = (runUid: string, attempt: number, entrypoint: string, args: string[] = []) => ({
  executionId: `${runUid}/${String(attempt)}`,
  runUid,
  attempt,
  workdir,
  entrypoint,
  args,
  env: {},
});

async function firstCase(events: AsyncIterator<runtimeServerV1.ExecuteEvent>): Promise<string | undefined> {
  const first = await events.next();
  return first.done === true ? undefined : first.value.event?.$case;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('GetExecution', () => {
  it('answers UNKNOWN for an attempt this server never ran', async () => {
    expect(await client.getExecution({ runUid: randomUUID(), attempt: 1 })).toEqual({
      state: ExecutionState.EXECUTION_STATE_UNKNOWN,
      executionId: '',
      started: undefined,
      exited: undefined,
    });
  });

  it('answers EXITED with exactly the exited event the stream carried', async () => {
    const run = randomUUID();
    let streamed: runtimeServerV1.ExecutionExited | undefined;
    for await (const { event } of client.execute(request(run, 2, 'exit7.sh'))) {
      if (event?.$case === 'exited') streamed = event.exited;
    }
    const status = await client.getExecution({ runUid: run, attempt: 2 });
    expect(status).toMatchObject({ state: ExecutionState.EXECUTION_STATE_EXITED, executionId: `${run}/2` });
    expect(status.started?.pid).toBeGreaterThan(0);
    expect(status.exited).toEqual(streamed);
    expect(status.exited).toMatchObject({ reason: ExitReason.EXIT_REASON_COMPLETED, exitCode: 7, outputs: { k: 'v' } });
    expect(await client.getExecution({ runUid: run, attempt: 1 })).toMatchObject({ state: ExecutionState.EXECUTION_STATE_UNKNOWN });
  });

  it('answers RUNNING while the process lives, then the real exit code after its stream was abandoned', async () => {
    const run = randomUUID();
    const release = join(workdir, `release-${run}`);
    const abandon = new AbortController();
    const events = client.execute(request(run, 1, 'wait.sh', [release]), { signal: abandon.signal })[Symbol.asyncIterator]();
    expect(await firstCase(events)).toBe('started');
    const running = await client.getExecution({ runUid: run, attempt: 1 });
    expect(running).toMatchObject({ state: ExecutionState.EXECUTION_STATE_RUNNING, executionId: `${run}/1` });
    expect(running.started?.pid).toBeGreaterThan(0);
    // The task ends by itself; nobody reads the stream's `exited`.
    await writeFile(release, '');
    const exited = await until('the ending', async () => {
      const status = await client.getExecution({ runUid: run, attempt: 1 });
      return status.state === ExecutionState.EXECUTION_STATE_EXITED ? status : undefined;
    });
    expect(exited.exited).toMatchObject({ reason: ExitReason.EXIT_REASON_COMPLETED, exitCode: 4 });
    abandon.abort();
    await events.return?.(undefined).catch(() => undefined);
  });

  it('records a stream closed mid-run as CANCELLED: the execution does not outlive it', async () => {
    const run = randomUUID();
    const abandon = new AbortController();
    const events = client.execute(request(run, 1, 'sleep.sh'), { signal: abandon.signal })[Symbol.asyncIterator]();
    expect(await firstCase(events)).toBe('started');
    abandon.abort();
    await events.next().catch(() => undefined);
    const exited = await until('the ending', async () => {
      const status = await client.getExecution({ runUid: run, attempt: 1 });
      return status.state === ExecutionState.EXECUTION_STATE_EXITED ? status : undefined;
    });
    expect(exited.exited).toMatchObject({
      reason: ExitReason.EXIT_REASON_CANCELLED,
      exitCode: -1,
      message: 'stopped because its Execute stream closed',
    });
    expect(exited.exited?.signal).not.toBe('');
  });

  it('records an execution that could not start', async () => {
    const run = randomUUID();
    for await (const _ of client.execute(request(run, 1, 'missing.sh'))) {
      // drain
    }
    expect(await client.getExecution({ runUid: run, attempt: 1 })).toMatchObject({
      state: ExecutionState.EXECUTION_STATE_EXITED,
      started: undefined,
      exited: { reason: ExitReason.EXIT_REASON_START_FAILED, exitCode: -1 },
    });
  });

  it('records a task whose interpreter is missing as one that could not start, naming it (not as its exit 127)', async () => {
    const run = randomUUID();
    for await (const _ of client.execute({ ...request(run, 1, 'exit7.sh'), env: { KRT_TEST_INTERPRETER: 'krt-no-such-interpreter' } })) {
      // drain
    }
    expect(await client.getExecution({ runUid: run, attempt: 1 })).toMatchObject({
      started: undefined,
      exited: {
        reason: ExitReason.EXIT_REASON_START_FAILED,
        exitCode: -1,
        message: expect.stringContaining('cannot start krt-no-such-interpreter: not found') as unknown,
      },
    });
  });

  it.each([
    ['a run_uid that is no UID', { runUid: 'not-a-uid', attempt: 1 }],
    ['attempt 0', { runUid: randomUUID(), attempt: 0 }],
  ])('refuses %s with InvalidRequest', async (_name, body) => {
    let trailer = Metadata();
    const error = await client
      .getExecution(body, {
        onTrailer: (t) => {
          trailer = t;
        },
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(ClientError);
    expect((error as ClientError).code).toBe(Status.INVALID_ARGUMENT);
    expect(trailer.get(METADATA_KEYS.errorCode)).toBe('InvalidRequest');
  });
});
