import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { Run } from '@kruntimes/api';
import { runtimeServerV1 } from '@kruntimes/proto';
import { StallingProxy, survivingGroupMembers, waitFor } from '@kruntimes/testing';
import { createChannel, createClient } from 'nice-grpc';
import type { Channel, Client } from 'nice-grpc';
import { RUNTIME_SERVER_PORT, RuntimeEnvironment, WAIT } from './runtime-pods.ts';

/**
 * runtimed reaches its Runtime Server through a proxy that can stall and then cut the
 * connection: an Execute stream broken before its `exited` reached runtimed.
 */
let env: RuntimeEnvironment;
let proxy: StallingProxy;
let pod: V1Pod;
let scratch: string;
let channel: Channel;
/** The test's own line to the Runtime Server, around the proxy. */
let direct: Client<runtimeServerV1.RuntimeServerDefinition>;

beforeAll(async () => {
  env = await RuntimeEnvironment.start('runtimed-lost');
  scratch = await mkdtemp(join(tmpdir(), 'runtimed-lost-'));
  // Until the Pod has its address the proxy refuses, and runtimed is not Ready yet.
  const upstream: { host?: string } = {};
  proxy = await StallingProxy.start(() => (upstream.host === undefined ? undefined : { host: upstream.host, port: RUNTIME_SERVER_PORT }));
  const ready = env.createRuntimePod('bash-proxied', 'bash', 'rt', { KRT_RUNTIME_SERVER: `127.0.0.1:${String(proxy.port)}` });
  const podIP = await waitFor(
    'the Pod IP',
    async () => (await env.core.readNamespacedPod({ namespace: env.name, name: 'bash-proxied' }).catch(() => undefined))?.status?.podIP,
    WAIT,
  );
  upstream.host = podIP;
  pod = await ready;
  channel = createChannel(`${podIP}:${String(RUNTIME_SERVER_PORT)}`);
  direct = createClient(runtimeServerV1.RuntimeServerDefinition, channel);
});

afterAll(async () => {
  channel.close();
  await proxy.close();
  await env.stop();
  await rm(scratch, { recursive: true, force: true });
});

const phase = (run: Run) => run.status?.phase;

test('an Execute stream cut before its exit reached runtimed: the Runtime Server record settles it with the real exit code', async () => {
  const started = join(scratch, 'started');
  const go = join(scratch, 'go');
  await env.createRun('cut', {
    runtime: 'rt',
    source: { inline: 'touch "$STARTED"\nwhile [ ! -e "$GO" ]; do sleep 0.1; done\necho finishing\nexit 7\n' },
    mode: { task: {} },
    env: [
      { name: 'STARTED', value: started },
      { name: 'GO', value: go },
    ],
    retryPolicy: { maxAttempts: 1 },
  });
  const bound = await env.bind('cut', pod);
  const uid = bound.metadata.uid ?? '';
  await waitFor(
    'the task to start',
    () =>
      stat(started).then(
        () => true,
        () => undefined,
      ),
    WAIT,
  );

  // Nothing moves between runtimed and its Runtime Server; the task ends meanwhile.
  proxy.stall();
  await writeFile(go, '');
  const recorded = await waitFor(
    'the Runtime Server to record the ending',
    async () => {
      const status = await direct.getExecution({ runUid: uid, attempt: 1 });
      return status.state === runtimeServerV1.ExecutionState.EXECUTION_STATE_EXITED ? status : undefined;
    },
    WAIT,
  );
  expect(recorded.exited).toMatchObject({ reason: runtimeServerV1.ExitReason.EXIT_REASON_COMPLETED, exitCode: 7 });
  expect(phase(await env.getRun('cut'))).toBe('Running');

  // The stream breaks with its `exited` still in flight.
  proxy.drop();
  const failed = await env.waitForRun('cut', 'Failed', (r) => phase(r) === 'Failed');
  expect(failed.status).toMatchObject({ phase: 'Failed', exitCode: 7, reason: 'NonZeroExit', attempt: 1 });
  expect(failed.status?.message).toContain('exited with code 7');
  const logs = (await env.logs('bash-proxied', 'runtimed')).filter((l) => l.runUID === uid);
  expect(logs.map((l) => l.msg)).toEqual(
    expect.arrayContaining([
      'the execution stream ended without an exit: asking the Runtime Server what became of it',
      'the Runtime Server reported the ending that the stream lost',
    ]),
  );
  // The task's last line was in the lost part of the stream: it never reached runtimed's logs.
  expect(logs.filter((l) => l.msg === 'task output').map((l) => l.line)).not.toContain('finishing');
});

// The Runtime Server killed with SIGKILL during a task (issue 45): neither the task's process
// group nor the temporary directories (the task's sandbox, the server's krt-bin-*) outlive
// it (their guard ends them when the Runtime Server's pipe closes), and the restarted Runtime
// Server has no record of the execution it had reported started: the attempt ends
// Interrupted, RuntimeServerLost, with a message saying the Runtime Server restarted during it.
test('a Runtime Server killed with SIGKILL during a task: its process group and temporary directories go with it, and the attempt ends RuntimeServerLost', async () => {
  const started = join(scratch, 'started-2');
  const dirs = join(scratch, 'dirs-2');
  await env.createRun('forgotten', {
    runtime: 'rt',
    // The leader and a child of its own in the group: the whole group must go. Before it
    // says it started: its scratch (where its outputs file is) and the server's krt-bin-* (first on its PATH).
    source: {
      inline: 'printf "%s\\n%s\\n" "$(dirname "$(dirname "$KRT_OUTPUTS_FILE")")" "${PATH%%:*}" > "$DIRS"\necho $$ > "$STARTED"\nsleep 60\n',
    },
    mode: { task: {} },
    env: [
      { name: 'STARTED', value: started },
      { name: 'DIRS', value: dirs },
    ],
    retryPolicy: { maxAttempts: 1 },
  });
  await env.bind('forgotten', pod);
  const pid = await waitFor(
    'the task to start',
    async () => Number((await readFile(started, 'utf8').catch(() => '')).trim()) || undefined,
    WAIT,
  );
  try {
    env.node.crashContainer(env.name, 'bash-proxied', 'runtime-server', 'SIGKILL');
    const ended = await env.waitForRun('forgotten', 'an end', (r) => phase(r) !== 'Running');
    expect(ended.status?.message).toContain('lost the execution');
    expect(ended.status?.message).toContain('no record');
    // Not OwnerLost: runtimed, the owner, is there; its Runtime Server died.
    expect(ended.status).toMatchObject({ phase: 'Interrupted', reason: 'RuntimeServerLost', attempt: 1 });
    expect(ended.status?.message).toContain('the Runtime Server restarted during the execution (killed or crashed)');
    // Killed when the Runtime Server died, long before the restarted one answered runtimed.
    expect(await survivingGroupMembers(pid)).toEqual([]);
    const [taskScratch = '', binDir = ''] = (await readFile(dirs, 'utf8')).trim().split('\n');
    expect([basename(taskScratch), basename(binDir)]).toEqual([expect.stringMatching(/^exec-/), expect.stringMatching(/^krt-bin-/)]);
    const exists = (path: string) =>
      stat(path).then(
        () => true,
        () => false,
      );
    // The guard removes them right after it killed the group: waited for, bounded.
    const left = async () => ({ taskScratch: await exists(taskScratch), binDir: await exists(binDir) });
    await waitFor(
      'the directories removed',
      async () => {
        const now = await left();
        return now.taskScratch || now.binDir ? undefined : true;
      },
      WAIT,
    ).catch(() => undefined);
    expect(await left()).toEqual({ taskScratch: false, binDir: false });
  } finally {
    // Nothing left behind, whatever the test found.
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

// The same loss of a retrySafe task with an attempt left: retried under the rules of a lost
// owner, as before the reason existed (on a Pod of its own, whose Runtime Server has not
// crashed yet: the kubelet restarts it at once).
test('a Runtime Server killed with SIGKILL during a retrySafe task with an attempt left: the attempt is retried', async () => {
  const started = join(scratch, 'started-3');
  const safePod = await env.createRuntimePod('bash-safe', 'bash', 'rt');
  await env.createRun('forgotten-safe', {
    runtime: 'rt',
    source: { inline: 'echo $$ > "$STARTED"\nsleep 60\n' },
    mode: { task: {} },
    env: [{ name: 'STARTED', value: started }],
    retryPolicy: { retrySafe: true, maxAttempts: 2, initialBackoffSeconds: 1, maxBackoffSeconds: 1 },
  });
  await env.bind('forgotten-safe', safePod);
  const pid = await waitFor(
    'the task to start',
    async () => Number((await readFile(started, 'utf8').catch(() => '')).trim()) || undefined,
    WAIT,
  );
  try {
    env.node.crashContainer(env.name, 'bash-safe', 'runtime-server', 'SIGKILL');
    const requeued = await env.waitForRun('forgotten-safe', 'requeued for attempt 2', (r) => r.status?.attempt === 2);
    expect(requeued.status).toMatchObject({ phase: 'Pending', attempt: 2, reason: 'RetryBackoff' });
    expect(requeued.status?.message).toContain('attempt 1: lost the execution: the Runtime Server restarted during the execution');
    expect(await survivingGroupMembers(pid)).toEqual([]);
  } finally {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});
