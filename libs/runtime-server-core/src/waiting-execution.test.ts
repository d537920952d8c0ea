import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KruntimesError } from '@kruntimes/errors';
import { durationFromMillis, runtimeServerV1 } from '@kruntimes/proto';
import { executeToEnd, startArtifactGrantsStub } from '@kruntimes/testing';
import type { ArtifactGrantsStub } from '@kruntimes/testing';
import { createChannel, createClient } from 'nice-grpc';
import type { Channel, Client } from 'nice-grpc';
import { pino } from 'pino';
import type { LanguageAdapter } from './adapter.ts';
import { groupHasLiveMembers } from './process-group.ts';
import { startRuntimeServer } from './server.ts';
import type { RunningRuntimeServer } from './server.ts';

const { ExitReason } = runtimeServerV1;

/** Tasks are Node scripts: the language does not matter to the core. */
const nodeAdapter: LanguageAdapter = {
  language: 'bash',
  prepare() {
    throw new KruntimesError('InvalidRequest', 'no functions in this test');
  },
  register() {
    return Promise.reject(new KruntimesError('InvalidRequest', 'no functions in this test'));
  },
  taskCommand: (entrypoint, args) => ({ command: process.execPath, args: [entrypoint, ...args] }),
};

const CHECKPOINT = randomBytes(100_000);
const SCHEMA = { type: 'object', properties: { approved: { type: 'boolean' } } };

/** Starts `sleep 300` in its group first (unless told not to), then waits; prints what it was answered. */
const WAIT = `
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
if (process.argv[2] !== 'alone') console.log('sleeper ' + spawn('sleep', ['300'], { stdio: 'ignore' }).pid);
const response = await fetch(process.env.KRT_ARTIFACTS_URL + '/v1/wait-for-input', {
  method: 'POST',
  headers: { authorization: 'Bearer ' + process.env.KRT_ARTIFACTS_TOKEN },
  body: JSON.stringify({ schema: ${JSON.stringify(SCHEMA)}, checkpoint: readFileSync('checkpoint.bin').toString('base64') }),
});
console.log('answer ' + response.status + ' ' + (await response.text()));
await new Promise((resolve) => setTimeout(resolve, process.argv[2] === 'alone' ? 10 : 120_000));
console.log('still running');
`;

const RESUMED = `
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
const names = ['KRT_CHECKPOINT_FILE', 'KRT_INPUT_FILE', 'KRT_RESPONSE_ID', 'KRT_RESUMED_FROM_ATTEMPT'];
const env = Object.fromEntries(names.filter((n) => process.env[n] !== undefined).map((n) => [n, process.env[n]]));
const read = (name) => (env[name] === undefined ? null : readFileSync(env[name]));
const checkpoint = read('KRT_CHECKPOINT_FILE');
const sha256 = checkpoint === null ? null : createHash('sha256').update(checkpoint).digest('hex');
console.log(JSON.stringify({ env, checkpoint: sha256, input: read('KRT_INPUT_FILE')?.toString('utf8') ?? null }));
`;

let server: RunningRuntimeServer;
let channel: Channel;
let client: Client<runtimeServerV1.RuntimeServerDefinition>;
let stub: ArtifactGrantsStub;
let workdir: string;

beforeAll(async () => {
  workdir = await mkdtemp(join(tmpdir(), 'krt-waiting-'));
  await writeFile(join(workdir, 'checkpoint.bin'), CHECKPOINT);
  await writeFile(join(workdir, 'wait.mjs'), WAIT);
  await writeFile(join(workdir, 'resumed.mjs'), RESUMED);
  stub = await startArtifactGrantsStub();
  server = await startRuntimeServer({ adapter: nodeAdapter, listen: '127.0.0.1:0', logger: pino({ level: 'silent' }) });
  channel = createChannel(`127.0.0.1:${String(server.port)}`);
  client = createClient(runtimeServerV1.RuntimeServerDefinition, channel);
});

afterAll(async () => {
  channel.close();
  await server.shutdown();
  await stub.close();
  await rm(workdir, { recursive: true, force: true });
});

const request = (entrypoint: string, grantToken: string | undefined, extra: Partial<runtimeServerV1.ExecuteRequest> = {}) => {
  const runUid = randomUUID();
  return {
    executionId: `${runUid}/${String(extra.attempt ?? 1)}`,
    runUid,
    attempt: 1,
    workdir,
    entrypoint,
    args: [],
    env: {},
    ...(grantToken === undefined
      ? {}
      : {
          artifacts: {
            grantAddress: stub.address,
            grantToken,
            declared: [{ artifactId: 'out.txt', maxBytes: 10, mediaType: 'text/plain', optional: true }],
          },
        }),
    ...extra,
  };
};

describe('an execution that waits for input', () => {
  it('ends WAITING_INPUT once runtimed recorded it, with no process of its group left; the store has the exact checkpoint', async () => {
    const token = randomUUID();
    stub.attempts.set(token, 3);
    const req = request('wait.mjs', token, { attempt: 3 });
    const { pgid, liveAtExit, exited, lines } = await executeToEnd(client, req);
    expect(pgid).toBeGreaterThan(1);
    expect(liveAtExit).toEqual([]);
    expect(lines[0]).toMatch(/^sleeper \d+$/);
    expect(lines).not.toContain('still running');
    expect(exited).toMatchObject({
      reason: ExitReason.EXIT_REASON_WAITING_INPUT,
      message: expect.stringContaining('attempt 3') as unknown,
    });
    const sha256 = createHash('sha256').update(CHECKPOINT).digest('hex');
    expect(stub.awaits.filter((a) => a.grantToken === token)).toEqual([
      { grantToken: token, checkpointSize: CHECKPOINT.byteLength, checkpointSha256: sha256, schemaJson: JSON.stringify(SCHEMA) },
    ]);
    const stored = stub.puts.filter((p) => p.path.startsWith(stub.checkpointPath(token)));
    expect(stored).toHaveLength(1);
    expect(stored[0]?.body?.equals(CHECKPOINT)).toBe(true);
    expect(stored[0]?.sha256).toBe(sha256);
    const status = await client.getExecution({ runUid: req.runUid, attempt: 3 });
    expect(status.exited?.reason).toBe(ExitReason.EXIT_REASON_WAITING_INPUT);
  });

  it('keeps running after runtimed refused, and ends by itself', async () => {
    const token = randomUUID();
    stub.awaitRefusals.set(token, { code: 'StaleAttempt', message: 'attempt 1 of the Run is no longer current' });
    const { exited, lines } = await executeToEnd(client, request('wait.mjs', token, { args: ['alone'] }));
    expect(lines).toContain('answer 409 {"code":"StaleAttempt","message":"attempt 1 of the Run is no longer current"}');
    expect(lines).toContain('still running');
    expect(exited).toMatchObject({ reason: ExitReason.EXIT_REASON_COMPLETED, exitCode: 0 });
  });

  it('ends WAITING_INPUT when AwaitInput succeeds after the process was already stopped', async () => {
    const token = randomUUID();
    let release = (): void => undefined;
    stub.awaitGates.set(
      token,
      new Promise<void>((resolve) => {
        release = resolve;
      }),
    );
    const req = request('wait.mjs', token);
    const awaits = stub.awaits.length;
    const run = executeToEnd(client, req);
    await until(() => Promise.resolve(stub.awaits.length > awaits));
    expect(await client.cancelExecution({ executionId: req.executionId, gracePeriod: durationFromMillis(0) })).toEqual({ found: true });
    // The whole group is gone while runtimed has not answered yet.
    const pid = (await client.getExecution({ runUid: req.runUid, attempt: 1 })).started?.pid ?? 0;
    expect(pid).toBeGreaterThan(1);
    await until(async () => !(await groupHasLiveMembers(pid)));
    release();
    const { exited } = await run;
    expect(exited?.reason).toBe(ExitReason.EXIT_REASON_WAITING_INPUT);
  });
});

describe('a continuation (ExecuteRequest.resume)', () => {
  const resume = { checkpoint: CHECKPOINT, checkpointAttempt: 2, inputJson: '{"approved": true, "note": "ok"}', responseId: 'resp-1' };

  it('gets the checkpoint and the response as files outside its workdir, named in its environment', async () => {
    const { lines, exited } = await executeToEnd(client, request('resumed.mjs', undefined, { attempt: 3, resume }));
    expect(exited?.exitCode).toBe(0);
    const seen = JSON.parse(lines.join('')) as { env: Record<string, string>; checkpoint: string; input: string };
    expect(seen.env).toMatchObject({ KRT_RESPONSE_ID: 'resp-1', KRT_RESUMED_FROM_ATTEMPT: '2' });
    expect(seen.checkpoint).toBe(createHash('sha256').update(CHECKPOINT).digest('hex'));
    expect(seen.input).toBe(resume.inputJson);
    expect(seen.env.KRT_CHECKPOINT_FILE?.startsWith(workdir)).toBe(false);
    expect(seen.env.KRT_INPUT_FILE?.startsWith(workdir)).toBe(false);
  });

  it('a first attempt sees none of it, even when the Run env names one', async () => {
    const { lines } = await executeToEnd(client, request('resumed.mjs', undefined, { env: { KRT_INPUT_FILE: '/etc/hostname' } }));
    expect(JSON.parse(lines.join(''))).toMatchObject({ env: {}, checkpoint: null, input: null });
  });

  it.each([
    ['a checkpoint attempt that is not earlier', { checkpointAttempt: 3 }],
    ['input that is not JSON', { inputJson: '{' }],
    ['a response ID that is not one', { responseId: '../x' }],
  ])('is refused with %s', async (_name, bad) => {
    await expect(executeToEnd(client, request('resumed.mjs', undefined, { attempt: 3, resume: { ...resume, ...bad } }))).rejects.toThrow(
      /INVALID_ARGUMENT|resume/,
    );
  });
});

async function until(probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
