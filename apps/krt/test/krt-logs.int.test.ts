// `krt logs` end to end: the real CLI reads a task's output through the API server's Pod log
// API (the local node serves it as a kubelet does) with the user's own rights: two attempts
// of a task (the first failed, the user's retry policy ran it again), two attempts of a
// retrySafe task whose first owner (runtimed) was killed, one attempt, -f while the task
// runs (and across the kill), the line bound, attempts whose Pod is gone (exit 3), a
// function Run's invocations (--invocation-id; an unknown one is exit 3), and a user
// without pods/log (exit 4). `krt run -f --follow` streams the same lines.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { API_GROUP, INVOCATION_ID_HEADER, RUN_PLURAL, RUNTIME_USER_RULES } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { System } from '@kruntimes/e2e';
import { currentPhase, finishKind } from '@kruntimes/run-state';
import { CONTAINERS } from '@kruntimes/runtime-workload';
import { NamespaceAccess, kubeconfigYaml, waitFor } from '@kruntimes/testing';
import { runKrt } from './run-krt.ts';
import type { CliResult } from './run-krt.ts';

const CLI_TIMEOUT_MS = 120_000;
const TEST_TIMEOUT_MS = 240_000;

let system: System;
const kubeconfigs: Record<'alice' | 'bob', string> = { alice: '', bob: '' };

beforeAll(async () => {
  system = await System.start({ prefix: 'krt-logs' });
  const access = new NamespaceAccess(system.cluster, system.name);
  const runs = { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list', 'watch', 'create'] };
  // Creating a Run needs `use` on its Runtime (the admission policy).
  await access.grantUser('alice', 'log-reader', [
    runs,
    ...RUNTIME_USER_RULES,
    { apiGroups: [''], resources: ['pods', 'pods/log'], verbs: ['get', 'list'] },
  ]);
  // bob may read and create Runs (so `use` the Runtime) and list Pods, not read their logs.
  await access.grantUser('bob', 'run-reader', [
    runs,
    ...RUNTIME_USER_RULES,
    { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] },
  ]);
  for (const user of ['alice', 'bob'] as const) {
    kubeconfigs[user] = join(system.dir, `${user}.kubeconfig`);
    await writeFile(
      kubeconfigs[user],
      kubeconfigYaml({ server: system.cluster.info.server, caPem: system.cluster.info.caPem, user, token: system.token(user) }),
      { mode: 0o600 },
    );
  }
  await system.createRuntime('one', { language: 'python', runs: 2 });
  await system.createRuntime('sh', { language: 'bash', runs: 2 });
  await system.createRuntime('fn', { language: 'python', runs: 1 });
  await system.waitRuntimeReady('one', 1);
}, 180_000);

afterAll(async () => {
  await system.stop();
});

function krt(args: string[], user: 'alice' | 'bob' = 'alice', stdin?: string): Promise<CliResult> {
  return runKrt(args, {
    kubeconfig: kubeconfigs[user],
    namespace: system.name,
    timeoutMs: CLI_TIMEOUT_MS,
    ...(stdin === undefined ? {} : { stdin }),
  });
}

async function createTask(name: string, runtime: string, source: string, spec: Partial<Run['spec']> = {}): Promise<void> {
  await system.objects.createNamespacedCustomObject({
    group: API_GROUP,
    version: 'v1alpha1',
    namespace: system.name,
    plural: RUN_PLURAL,
    body: {
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata: { name },
      spec: { runtime, source: { inline: source }, mode: { task: {} }, ...spec },
    },
  });
}

const finished = (run: Run): boolean => finishKind(currentPhase(run)) !== undefined;

// Attempt 1 fails (the retrySafe task's retry policy gives it a second attempt), attempt 2 succeeds.
const TWO_ATTEMPTS = `import os, sys
attempt = os.environ["KRT_ATTEMPT"]
print(f"attempt {attempt}: out", flush=True)
print(f"attempt {attempt}: err", file=sys.stderr, flush=True)
if attempt == "1":
    sys.exit(3)
print(f"attempt {attempt}: done", flush=True)
`;

test(
  'a task that failed once and succeeded on its second attempt: both attempts, by attempt; one attempt; exit 3 once their Pod is gone',
  async () => {
    await createTask('twice', 'one', TWO_ATTEMPTS, { retryPolicy: { retrySafe: true, maxAttempts: 2, initialBackoffSeconds: 1 } });
    const done = await system.waitForRun('twice', 'finished', finished, 120_000);
    expect({ phase: currentPhase(done), attempt: done.status?.attempt }).toEqual({ phase: 'Succeeded', attempt: 2 });

    const both = await waitForOutput(['logs', 'twice'], 'attempt 2: done');
    expect(both).toEqual({
      code: 0,
      stdout: 'attempt 1: out\nattempt 2: out\nattempt 2: done\n',
      stderr: '== attempt 1 ==\nattempt 1: err\n== attempt 2 ==\nattempt 2: err\n',
    });
    expect(await krt(['logs', 'twice', '--attempt', '1'])).toEqual({ code: 0, stdout: 'attempt 1: out\n', stderr: 'attempt 1: err\n' });

    // The one Pod both attempts ran on is deleted: its log goes with it (its Deployment makes another).
    const [pod] = await system.waitRuntimeReady('one', 1);
    const name = pod?.metadata?.name ?? '';
    await system.core.deleteNamespacedPod({ namespace: system.name, name, gracePeriodSeconds: 0 });
    await waitFor(
      'the Pod gone',
      async () =>
        (await system.core.readNamespacedPod({ namespace: system.name, name }).catch(() => undefined)) === undefined ? true : undefined,
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    const gone = await krt(['logs', 'twice']);
    expect(gone).toEqual({
      code: 3,
      stdout: '',
      stderr:
        'attempt 1 of Run "twice": its output is no longer available (the Pod it ran on is gone)\n' +
        'attempt 2 of Run "twice": its output is no longer available (the Pod it ran on is gone)\n',
    });
  },
  TEST_TIMEOUT_MS,
);

// Attempt 1 writes its lines and waits: its owner is killed under it; attempt 2 finishes.
const KILLED_OWNER = `import os, sys, time
attempt = os.environ["KRT_ATTEMPT"]
print(f"attempt {attempt}: out", flush=True)
print(f"attempt {attempt}: err", file=sys.stderr, flush=True)
if attempt == "1":
    time.sleep(300)
print(f"attempt {attempt}: done", flush=True)
`;

test(
  "a retrySafe task whose first owner was killed (SIGKILL to runtimed), run again: both attempts from the Pod's previous and current runtimed logs, by attempt, and followed across the kill",
  async () => {
    const [pod] = await system.waitRuntimeReady('one', 1);
    const podName = pod?.metadata?.name ?? '';
    await createTask('killed', 'one', KILLED_OWNER, { retryPolicy: { retrySafe: true, maxAttempts: 2, initialBackoffSeconds: 1 } });
    await system.waitForRun('killed', 'Running', (run) => currentPhase(run) === 'Running' || finished(run));
    const following = krt(['logs', 'killed', '-f']);
    // Attempt 1's lines are in its owner's log before the owner goes.
    expect(await waitForOutput(['logs', 'killed'], 'attempt 1: err')).toEqual({
      code: 0,
      stdout: 'attempt 1: out\n',
      stderr: 'attempt 1: err\n',
    });

    system.node.crashContainer(system.name, podName, CONTAINERS.runtimed, 'SIGKILL');
    const done = await system.waitForRun('killed', 'finished', finished, 120_000);
    expect({ phase: currentPhase(done), attempt: done.status?.attempt, pod: done.status?.assignedPod }).toEqual({
      phase: 'Succeeded',
      attempt: 2,
      pod: podName,
    });
    // The kubelet's way (the local node's too): the killed container restarted in its Pod, its log kept as the previous one.
    const restarted = await system.core.readNamespacedPod({ namespace: system.name, name: podName });
    expect(restarted.status?.containerStatuses?.find((c) => c.name === CONTAINERS.runtimed)?.restartCount).toBe(1);

    const both = await waitForOutput(['logs', 'killed'], 'attempt 2: done');
    expect(both).toEqual({
      code: 0,
      stdout: 'attempt 1: out\nattempt 2: out\nattempt 2: done\n',
      stderr: '== attempt 1 ==\nattempt 1: err\n== attempt 2 ==\nattempt 2: err\n',
    });
    expect(await krt(['logs', 'killed', '--attempt', '1'])).toEqual({ code: 0, stdout: 'attempt 1: out\n', stderr: 'attempt 1: err\n' });
    expect(await krt(['logs', 'killed', '--attempt', '2'])).toEqual({
      code: 0,
      stdout: 'attempt 2: out\nattempt 2: done\n',
      stderr: 'attempt 2: err\n',
    });
    // -f from attempt 1 on: each line once, a heading when attempt 2 starts, the end with the Run.
    expect(await following).toEqual({
      code: 0,
      stdout: 'attempt 1: out\nattempt 2: out\nattempt 2: done\n',
      stderr: 'attempt 1: err\n== attempt 2 ==\nattempt 2: err\n',
    });
  },
  TEST_TIMEOUT_MS,
);

const ECHO = `
def handle(event, context):
    return {"echo": event}
`;

test(
  'a function Run invoked twice: one line per invocation; --invocation-id shows only that one; an unknown ID says so, exit 3',
  async () => {
    await system.createFunctionRun('echo', 'fn', ECHO, 'main:handle');
    const ready = await system.waitReady('echo');
    // Not invoked yet: nothing to show, and nothing missing.
    expect(await krt(['logs', 'echo'])).toEqual({ code: 0, stdout: '', stderr: '' });
    for (const id of ['inv-one', 'inv-two']) {
      const answer = await system.invoke({
        runtime: 'fn',
        uid: ready.metadata.uid ?? '',
        token: system.token('alice'),
        body: '{"n":1}',
        headers: { [INVOCATION_ID_HEADER]: id },
      });
      expect(answer.status).toBe(200);
    }
    const line = (id: string): RegExp => new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z ${id} OK \\d+ms attempt 1 local$`);
    const all = await waitForOutput(['logs', 'echo'], ' inv-two ');
    expect(all).toMatchObject({ code: 0, stderr: '' });
    const lines = all.stdout.split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(line('inv-one'));
    expect(lines[1]).toMatch(line('inv-two'));
    expect(lines[2]).toBe('');

    const one = await krt(['logs', 'echo', '--invocation-id', 'inv-two']);
    expect(one).toMatchObject({ code: 0, stderr: '' });
    expect(one.stdout).toMatch(new RegExp(`${line('inv-two').source.slice(0, -1)}\n$`));
    expect(one.stdout.split('\n')).toHaveLength(2);

    expect(await krt(['logs', 'echo', '--invocation-id', 'never-invoked'])).toEqual({
      code: 3,
      stdout: '',
      stderr:
        'invocation "never-invoked" of Run "echo" is not in the logs of its Runtime\'s Pods (not invoked, or the Pod that served it is gone)\n',
    });
  },
  TEST_TIMEOUT_MS,
);

test(
  'krt logs -f while a Bash task runs: every line as it comes, then it ends with the Run; a line over the bound is cut with a marker',
  async () => {
    const long = 'x'.repeat(20_000);
    await createTask('steps', 'sh', `for i in 1 2 3 4 5; do echo "step $i"; sleep 0.5; done\necho ${long}\necho last\n`);
    await system.waitForRun('steps', 'Running', (run) => currentPhase(run) === 'Running' || finished(run));
    const followed = await krt(['logs', 'steps', '-f']);
    expect(followed.code).toBe(0);
    const lines = followed.stdout.split('\n');
    expect(lines.slice(0, 5)).toEqual(['step 1', 'step 2', 'step 3', 'step 4', 'step 5']);
    expect(lines[5]).toMatch(/^x{1000,}x \[kruntimes: line cut at the line bound\]$/);
    expect((lines[5] ?? '').length).toBeLessThan(long.length);
    expect(lines.slice(6)).toEqual(['last', '']);
    expect(currentPhase(await system.getRun('steps'))).toBe('Succeeded');
  },
  TEST_TIMEOUT_MS,
);

test(
  'krt run -f --follow streams the output of the Run it created; a user without pods/log is refused with exit 4',
  async () => {
    const manifest = join(system.dir, 'follow.yaml');
    await writeFile(
      manifest,
      `apiVersion: kruntimes.io/v1alpha1\nkind: Run\nmetadata: {name: followed}\nspec:\n  runtime: sh\n  source: {inline: "echo one; sleep 1; echo two >&2; exit 4"}\n  mode: {task: {}}\n`,
    );
    const result = await krt(['run', '-f', manifest, '--follow', '--timeout', '90s']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('run/followed created\none\n');
    expect(result.stderr).toContain('two\n');
    expect(result.stderr.trimEnd().split('\n').at(-1)).toMatch(/^run\/followed: Failed \(.*exit code 4\)/);

    const refused = await krt(['logs', 'followed'], 'bob');
    expect(refused.code).toBe(4);
    expect(refused.stderr).toMatch(/^error: the API server refused to read the logs of Pod "[^"]+" \(pods\/log\)/);

    // krt run --follow as bob: the Run is created, its output refused; krt stops waiting there (exit 4), the Run goes on.
    const createdByBob = await krt(['run', '-f', manifest, '--name', 'bobs', '--follow', '--timeout', '90s'], 'bob');
    expect(createdByBob.code).toBe(4);
    expect(createdByBob.stdout).toBe('run/bobs created\n');
    expect(createdByBob.stderr.trimEnd().split('\n').at(-1)).toMatch(
      /^error: the API server refused to follow the logs of Pod "[^"]+" \(pods\/log\)/,
    );
  },
  TEST_TIMEOUT_MS,
);

/** Runs krt until its output holds `text` (a lagging log), bounded; the last result. */
async function waitForOutput(args: string[], text: string, code = 0): Promise<CliResult> {
  let result: CliResult | undefined;
  for (let i = 0; i < 40; i += 1) {
    result = await krt(args);
    if (result.code === code && `${result.stdout}${result.stderr}`.includes(text)) return result;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`krt ${args.join(' ')} never showed ${JSON.stringify(text)}: ${JSON.stringify(result)}`);
}
