import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { Run } from '@kruntimes/api';
import { findCondition } from '@kruntimes/run-state';
import { survivingProcesses, waitFor } from '@kruntimes/testing';
import { RuntimeEnvironment } from './runtime-pods.ts';

let env: RuntimeEnvironment;
let pod: V1Pod;
let scratch: string;

beforeAll(async () => {
  env = await RuntimeEnvironment.start('runtimed-task');
  pod = await env.createRuntimePod('bash-0', 'bash');
  scratch = await mkdtemp(join(tmpdir(), 'runtimed-task-'));
});

afterAll(async () => {
  await env.stop();
  await rm(scratch, { recursive: true, force: true });
});

const phase = (run: Run) => run.status?.phase;

test('a task Run that exits 0 succeeds with its outputs; its output goes to runtimed logs, never to status', async () => {
  await env.createRun('ok', {
    runtime: 'rt',
    source: { inline: 'echo "hello $1 from $KRT_RUN_NAME"\nprintf \'{"answer":"42"}\' > "$KRT_OUTPUTS_FILE"\n' },
    mode: { task: { args: ['world'] } },
  });
  await env.bind('ok', pod);
  const done = await env.waitForRun('ok', 'Succeeded', (r) => phase(r) === 'Succeeded');
  expect(done.status).toMatchObject({ phase: 'Succeeded', exitCode: 0, outputs: { answer: '42' }, attempt: 1, reason: 'Succeeded' });
  expect(done.status?.startTime).toBeDefined();
  expect(done.status?.completionTime).toBeDefined();
  expect(done.status?.message).not.toContain('hello');
  const lines = (await env.logs('bash-0', 'runtimed')).filter((l) => l.runUID === done.metadata.uid && l.msg === 'task output');
  expect(lines.map((l) => l.line)).toEqual(['hello world from ok']);
});

test('a task Run that is not retrySafe and exits non-zero fails after one attempt (the default policy)', async () => {
  await env.createRun('exit-once', {
    runtime: 'rt',
    source: { inline: 'echo failing >&2\nexit 4\n' },
    mode: { task: {} },
  });
  await env.bind('exit-once', pod);
  const failed = await env.waitForRun('exit-once', 'Failed', (r) => phase(r) === 'Failed');
  expect(failed.status).toMatchObject({ phase: 'Failed', exitCode: 4, reason: 'NonZeroExit', attempt: 1 });
  expect(failed.status?.message).toContain('attempt 1 of 1: exited with code 4');
  expect(failed.status?.notBefore).toBeUndefined();
});

test('a retrySafe task Run that exits non-zero is retried per its policy and then fails with the exit code', async () => {
  await env.createRun('exit-3', {
    runtime: 'rt',
    source: { inline: 'echo failing >&2\nexit 3\n' },
    mode: { task: {} },
    // Only a retrySafe task may run more than once.
    retryPolicy: { maxAttempts: 2, initialBackoffSeconds: 1, maxBackoffSeconds: 1, retrySafe: true },
  });
  await env.bind('exit-3', pod);
  const requeued = await env.waitForRun('exit-3', 'requeued for attempt 2', (r) => phase(r) === 'Pending' && r.status?.attempt === 2);
  expect(requeued.status?.message).toContain('attempt 1: exited with code 3');
  await env.waitForTime(requeued.status?.notBefore ?? '');
  await env.bind('exit-3', pod);
  const failed = await env.waitForRun('exit-3', 'Failed', (r) => phase(r) === 'Failed');
  expect(failed.status).toMatchObject({ phase: 'Failed', exitCode: 3, reason: 'NonZeroExit', attempt: 2 });
  expect(failed.status?.message).toContain('exited with code 3');
  expect(findCondition(failed.status?.conditions, 'Ready')).toMatchObject({ status: 'False', reason: 'NonZeroExit' });
});

test('a cancelled task Run is stopped with its whole process group, then Cancelled', async () => {
  const pidFile = join(scratch, 'pids');
  await env.createRun('long', {
    runtime: 'rt',
    source: { inline: 'sleep 300 &\necho $! > "$PID_FILE"\necho $$ >> "$PID_FILE"\necho started\nwait\n' },
    mode: { task: {} },
    env: [{ name: 'PID_FILE', value: pidFile }],
  });
  await env.bind('long', pod);
  const pids = await waitFor(
    'the task to write its PIDs',
    async () => {
      const text = await readFile(pidFile, 'utf8').catch(() => '');
      const numbers = text
        .split('\n')
        .filter((l) => l !== '')
        .map(Number);
      return numbers.length === 2 ? numbers : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100 },
  );
  expect(await survivingProcesses(pids, 0)).not.toEqual([]);
  await env.patchRunSpec('long', { cancelRequested: true });
  const cancelled = await env.waitForRun('long', 'Cancelled', (r) => phase(r) === 'Cancelled');
  expect(cancelled.status).toMatchObject({ phase: 'Cancelled', reason: 'Cancelled' });
  // Cancelled is written only after the Runtime Server reported the execution's end.
  // Reported only once no process of the group is left: none may be alive at this moment.
  expect(await survivingProcesses(pids, 0)).toEqual([]);
});

test('deleting a running task Run stops its execution: no process is left behind', async () => {
  const pidFile = join(scratch, 'deleted-pids');
  await env.createRun('doomed', {
    runtime: 'rt',
    source: { inline: 'sleep 300 &\necho $! > "$PID_FILE"\necho $$ >> "$PID_FILE"\nwait\n' },
    mode: { task: {} },
    env: [{ name: 'PID_FILE', value: pidFile }],
  });
  await env.bind('doomed', pod);
  const pids = await waitFor(
    'the task to write its PIDs',
    async () => {
      const numbers = (await readFile(pidFile, 'utf8').catch(() => ''))
        .split('\n')
        .filter((l) => l !== '')
        .map(Number);
      return numbers.length === 2 ? numbers : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100 },
  );
  await env.deleteRun('doomed');
  await env.waitForRunGone('doomed');
  // Tasks carry no finalizer: the object goes at once and runtimed stops the work after.
  expect(await survivingProcesses(pids, 30_000, 100)).toEqual([]);
});

test('a task Run still running at spec.timeout after startTime is stopped and ends in Timeout', async () => {
  await env.createRun('too-slow', { runtime: 'rt', source: { inline: 'sleep 60\n' }, mode: { task: {} }, timeout: '2s' });
  await env.bind('too-slow', pod);
  const ended = await env.waitForRun('too-slow', 'Timeout', (r) => phase(r) === 'Timeout');
  expect(ended.status).toMatchObject({ phase: 'Timeout', reason: 'Timeout', attempt: 1 });
  expect(ended.status?.message).toContain('spec.timeout (2s)');
});

test('task durations are exported by outcome', async () => {
  const text = await (await fetch(`http://${pod.status?.podIP ?? ''}:9464/metrics`)).text();
  const count = (outcome: string): number =>
    Number(
      new RegExp(`^kruntimes_runtimed_task_duration_seconds_count\\{outcome="${outcome}"\\} (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN,
    );
  // The Runs above: one success, three failed attempts, one cancel, one timeout (the deleted one was released).
  expect(count('succeeded')).toBe(1);
  expect(count('failed')).toBe(3);
  expect(count('cancelled')).toBe(1);
  expect(count('released')).toBe(1);
  expect(count('timeout')).toBeGreaterThanOrEqual(1);
});

/** Waits for a file the task writes, and returns its non-empty lines. */
async function fileLines(path: string, what: string): Promise<string[]> {
  return waitFor(
    what,
    async () => {
      const lines = (await readFile(path, 'utf8').catch(() => '')).split('\n').filter((l) => l !== '');
      return lines.length > 0 ? lines : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 50 },
  );
}

test('a cancel being carried out shows Ready=False Cancelling while the process group stops; a task that then exits 0 ends Cancelled', async () => {
  const pidFile = join(scratch, 'graceful-pids');
  const termFile = join(scratch, 'graceful-term');
  await env.createRun('graceful', {
    runtime: 'rt',
    // SIGTERM is handled: it takes a while (within the 2 s grace), then exits 0.
    source: { inline: `trap 'echo term > "$TERM_FILE"; sleep 1.5; exit 0' TERM\necho $$ > "$PID_FILE"\nwhile true; do sleep 0.1; done\n` },
    mode: { task: {} },
    env: [
      { name: 'PID_FILE', value: pidFile },
      { name: 'TERM_FILE', value: termFile },
    ],
  });
  await env.bind('graceful', pod);
  const pids = (await fileLines(pidFile, 'the task to write its PID')).map(Number);
  await env.patchRunSpec('graceful', { cancelRequested: true });
  const cancelling = await env.waitForRun('graceful', 'Cancelling', (r) => r.status?.reason === 'Cancelling');
  expect(cancelling.status).toMatchObject({ phase: 'Running', reason: 'Cancelling' });
  expect(findCondition(cancelling.status?.conditions, 'Ready')).toMatchObject({ status: 'False', reason: 'Cancelling' });
  await fileLines(termFile, 'the task to receive SIGTERM');
  // The task is still in its SIGTERM handler: the Run shows the stop in progress.
  expect(await survivingProcesses(pids, 0)).toEqual(pids);
  expect((await env.getRun('graceful')).status).toMatchObject({ phase: 'Running', reason: 'Cancelling' });
  const cancelled = await env.waitForRun('graceful', 'Cancelled', (r) => phase(r) === 'Cancelled');
  // The exit 0 after the accepted cancel does not make it Succeeded; it is recorded.
  expect(cancelled.status).toMatchObject({ phase: 'Cancelled', reason: 'Cancelled', exitCode: 0 });
  expect(cancelled.status?.message).toContain('the task exited 0');
  // Reported only once no process of the group is left: none may be alive at this moment.
  expect(await survivingProcesses(pids, 0)).toEqual([]);
});

test('a task that exits 0 just after its cancel was stored ends Cancelled, its exit code recorded', async () => {
  const pidFile = join(scratch, 'late-pids');
  const goFile = join(scratch, 'late-go');
  await env.createRun('late', {
    runtime: 'rt',
    // Exits 0 as soon as it is told to, and on SIGTERM too: whichever comes first, the
    // process reports success after the cancel was stored (by the Runtime Server's
    // stop, or on its own before runtimed acted on the cancel).
    source: {
      inline: `trap 'exit 0' TERM\necho $$ > "$PID_FILE"\nwhile [ ! -e "$GO_FILE" ]; do sleep 0.01; done\nprintf '{"sent":"yes"}' > "$KRT_OUTPUTS_FILE"\nexit 0\n`,
    },
    mode: { task: {} },
    env: [
      { name: 'PID_FILE', value: pidFile },
      { name: 'GO_FILE', value: goFile },
    ],
  });
  await env.bind('late', pod);
  await fileLines(pidFile, 'the task to start');
  await env.patchRunSpec('late', { cancelRequested: true });
  await writeFile(goFile, 'go');
  const ended = await env.waitForRun('late', 'terminal', (r) => ['Succeeded', 'Cancelled', 'Failed'].includes(phase(r) ?? ''));
  expect(ended.status).toMatchObject({ phase: 'Cancelled', reason: 'Cancelled', exitCode: 0 });
  expect(ended.status?.message).toMatch(/exited 0/);
});

test('runtimed killed during a task: the Runtime Server stops it, and the restarted runtimed retries it only if it is retrySafe', async () => {
  // maxAttempts > 1 needs retrySafe; the unsafe task runs once either way.
  const start = (name: string, retrySafe: boolean): Promise<number[]> =>
    env.startLongTask(name, pod, scratch, {
      ...(retrySafe ? { maxAttempts: 3 } : {}),
      initialBackoffSeconds: 1,
      maxBackoffSeconds: 1,
      retrySafe,
    });
  const unsafePids = await start('unsafe', false);
  const safePids = await start('safe', true);
  env.node.crashContainer(env.name, 'bash-0', 'runtimed', 'SIGKILL');

  const interrupted = await env.waitForRun('unsafe', 'Interrupted', (r) => phase(r) === 'Interrupted');
  expect(interrupted.status).toMatchObject({ attempt: 1, reason: 'OwnerLost' });
  expect(interrupted.status?.message).toContain('not retrySafe');
  const requeued = await env.waitForRun('safe', 'requeued for attempt 2', (r) => phase(r) === 'Pending' && r.status?.attempt === 2);
  expect(requeued.status?.message).toContain('runtimed restarted during the execution');
  expect(await survivingProcesses([...unsafePids, ...safePids], 30_000, 100)).toEqual([]);
});
