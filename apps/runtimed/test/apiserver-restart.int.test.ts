// A task that ends while kube-apiserver is down (issue 21, found by the soak with seed 53:
// a task of about 1 s ended Timeout after a kube-apiserver restart, long after it had
// exited 0). runtimed cannot write the outcome then; once the API server is back the
// outcome it kept is written, whatever time passed, and never overtaken by the lifetime
// timeout. A control plane of its own: the shared one must not stop.
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, ARTIFACT_STORE_PLURAL } from '@kruntimes/api';
import type { ArtifactStore, Run, RunSpec } from '@kruntimes/api';
import { currentPhase, isTerminal } from '@kruntimes/run-state';
import { Cluster, ControlPlane, ObjectStore, REPO_ROOT, waitFor } from '@kruntimes/testing';
import { RuntimeEnvironment, WAIT } from './runtime-pods.ts';

let controlPlane: ControlPlane;
let env: RuntimeEnvironment;
let pod: V1Pod;
let scratch: string;
let store: ObjectStore;

const STORE = 'results';
const REPORT = 'day,total\n2026-12-03,42\n';

beforeAll(async () => {
  controlPlane = await ControlPlane.start({ crdDirectories: [join(REPO_ROOT, 'deploy/charts/kruntimes/crds')] });
  env = await RuntimeEnvironment.start('runtimed-apiserver', new Cluster(controlPlane.info));
  store = await ObjectStore.start();
  await store.createBucket('artifacts');
  await env.core.createNamespacedSecret({
    namespace: env.name,
    body: { metadata: { name: 'results-s3' }, stringData: { ...store.credentials } },
  });
  const artifactStore: ArtifactStore = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'ArtifactStore',
    metadata: { name: STORE },
    spec: { endpoint: store.endpoint, bucket: 'artifacts', prefix: 'e2e', credentialsSecretRef: { name: 'results-s3' } },
  };
  await env.objects.createNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: env.name,
    plural: ARTIFACT_STORE_PLURAL,
    body: artifactStore,
  });
  pod = await env.createRuntimePod('bash-0', 'bash');
  scratch = await mkdtemp(join(tmpdir(), 'runtimed-apiserver-'));
}, 180_000);

afterAll(async () => {
  await env.stop();
  await store.stop();
  await controlPlane.stop();
  await rm(scratch, { recursive: true, force: true });
});

const OUTCOME_WRITTEN = 'task outcome written after the API server answered again';
const UNREADABLE = 'the outcome record is unreadable; the attempt is written as interrupted';

const exists = (path: string): Promise<true | undefined> =>
  stat(path).then(
    () => true,
    () => undefined,
  );

test('a task that exits 0 while kube-apiserver is down ends Succeeded once it is back, not Timeout', async () => {
  const started = join(scratch, 'started');
  const go = join(scratch, 'go');
  // Far longer than the task (it runs about 1 s once released), short enough that a
  // lost outcome shows as Timeout within the test's wait.
  const timeout = 25;
  await env.createRun('short', {
    runtime: 'rt',
    source: { inline: 'touch "$STARTED"\nwhile [ ! -e "$GO" ]; do sleep 0.1; done\nsleep 1\necho done\n' },
    mode: { task: {} },
    timeout: `${String(timeout)}s`,
    env: [
      { name: 'STARTED', value: started },
      { name: 'GO', value: go },
    ],
    retryPolicy: { maxAttempts: 1 },
  });
  const bound = await env.bind('short', pod);
  const uid = bound.metadata.uid ?? '';
  await waitFor('the task to start', () => exists(started), WAIT);

  const mine = (line: Record<string, unknown>): boolean => line.runUID === uid;
  await controlPlane.stopApiServer();
  try {
    // The task ends while nothing can be written: runtimed's first outcome write fails.
    await writeFile(go, '');
    await waitFor(
      'runtimed to fail writing the outcome',
      async () =>
        (await env.logs('bash-0', 'runtimed')).some((line) => mine(line) && line.msg === 'writing the task outcome failed')
          ? true
          : undefined,
      WAIT,
    );
  } finally {
    // Started again whatever happened: the environment's cleanup needs it.
    await controlPlane.startApiServer();
  }

  // Terminal within the lifetime bound and some margin: a lost outcome would leave it
  // Running until spec.timeout and then end it Timeout.
  const ended = await env.waitForRun('short', 'terminal', (run: Run) => isTerminal(currentPhase(run)), (timeout + 20) * 1000);
  expect(ended.status).toMatchObject({ phase: 'Succeeded', exitCode: 0, attempt: 1 });
  const said = await saidUntil(uid, OUTCOME_WRITTEN);
  // Run once, and the outcome it had is the one written.
  expect(said.filter((msg) => msg === 'task exited')).toHaveLength(1);
  expect(said).toContain(OUTCOME_WRITTEN);
  expect(said).not.toContain('lifetime timeout');
});

// The same end, and runtimed is killed (SIGKILL) and started again while kube-apiserver is
// still down: the outcome it kept in memory is gone with it, and so is the attempt's
// workspace (removed before the write). The end recorded on the Pod is written once the API
// server is back; the task is never executed again (at most once per attempt).
test.each([
  ['exits 0 with outputs: Succeeded with them', 0, { phase: 'Succeeded', exitCode: 0, outputs: { answer: '42' } }],
  ['exits 3: Failed with its exit code', 3, { phase: 'Failed', exitCode: 3 }],
] as const)('runtimed restarted while kube-apiserver is down after the task ended: %s, executed once', async (_name, code, expected) => {
  const { uid, ended, executions, said } = await endThenRestartWhileDown(`restarted-${String(code)}`, code, OUTCOME_WRITTEN);
  expect(ended.status).toMatchObject({ ...expected, attempt: 1 });
  // Executed once: the restarted runtimed wrote the end the first one recorded on the Pod.
  expect(executions).toBe('executed\n');
  expect(said.filter((msg) => msg === 'task started')).toHaveLength(1);
  expect(said).toContain('writing the outcome recorded on the Pod before runtimed restarted');
  expect(said).toContain(OUTCOME_WRITTEN);
  expect(said).not.toContain('lifetime timeout');
  // The record goes once the outcome is written.
  await waitFor('the outcome record to be removed', async () => ((await recordsOf(uid)).length === 0 ? true : undefined), WAIT);
});

// The same with an artifact (issue 45): the record carries the manifest the Runtime Server
// sent, and the restarted runtimed verifies it in the store before the Run may succeed; the
// Run gets the exit code, the outputs and the verified artifact of the one execution.
test('runtimed restarted while kube-apiserver is down after a task with an artifact ended: Succeeded with outputs and the verified artifact, executed once', async () => {
  const artifacts: RunSpec['artifacts'] = { store: STORE, outputs: [{ id: 'report.csv', maxBytes: 1024, mediaType: 'text/csv' }] };
  const { uid, ended, executions, said } = await endThenRestartWhileDown('restarted-artifact', 0, OUTCOME_WRITTEN, undefined, artifacts);
  expect(ended.status).toMatchObject({
    phase: 'Succeeded',
    exitCode: 0,
    attempt: 1,
    outputs: { answer: '42' },
    artifacts: [
      {
        id: 'report.csv',
        digest: `sha256:${createHash('sha256').update(REPORT).digest('hex')}`,
        size: REPORT.length,
        mediaType: 'text/csv',
      },
    ],
  });
  expect(executions).toBe('executed\n');
  expect(said.filter((msg) => msg === 'task started')).toHaveLength(1);
  expect(said).toContain('writing the outcome recorded on the Pod before runtimed restarted');
  await waitFor('the outcome record to be removed', async () => ((await recordsOf(uid)).length === 0 ? true : undefined), WAIT);
});

// A record that cannot be read still proves the attempt ran and ended here: it is not run
// again, and since how it ended is unknown the attempt is interrupted (not retrySafe: the
// Run ends Interrupted), with the reason in its message.
test('an unreadable outcome record: the attempt is interrupted with the reason, not executed again', async () => {
  const { uid, ended, executions, said } = await endThenRestartWhileDown('unreadable', 0, UNREADABLE, async (uid) => {
    const [record, ...others] = await recordsOf(uid);
    expect(others).toEqual([]);
    await writeFile(join(env.stateDir, record ?? ''), '{"version":1,"uid":');
  });
  expect(ended.status).toMatchObject({ phase: 'Interrupted', reason: 'OwnerLost', attempt: 1 });
  expect(ended.status?.message).toMatch(/record of how attempt 1 of Run .* ended is unreadable: not JSON/);
  expect(executions).toBe('executed\n');
  expect(said.filter((msg) => msg === 'task started')).toHaveLength(1);
  expect(said).toContain(UNREADABLE);
  await waitFor('the outcome record to be removed', async () => ((await recordsOf(uid)).length === 0 ? true : undefined), WAIT);
});

/**
 * A task that exits `code` while kube-apiserver is down; runtimed fails to write the
 * outcome, is killed and started again (and fails to start) while the API server is still
 * down; `meanwhile` runs then. With `artifacts`, the task first puts report.csv (while the
 * API server is up). Resolves once the Run is terminal after the API server is
 * back, with what runtimed said of it up to `last` (saidUntil).
 */
async function endThenRestartWhileDown(
  name: string,
  code: number,
  last: string,
  meanwhile?: (uid: string) => Promise<void>,
  artifacts?: RunSpec['artifacts'],
): Promise<{ uid: string; ended: Run; executions: string; said: unknown[] }> {
  const dir = await mkdtemp(join(scratch, `${name}-`));
  const started = join(dir, 'started');
  const go = join(dir, 'go');
  // Outside the workspace: one line per execution of the task.
  const executions = join(dir, 'executions');
  const timeout = 25;
  await env.createRun(name, {
    runtime: 'rt',
    source: {
      inline: [
        'echo executed >> "$EXECUTIONS"',
        ...(artifacts === undefined
          ? []
          : [`printf '${REPORT.replaceAll('\n', '\\n')}' > report.csv`, 'krt-artifact put report.csv report.csv text/csv > /dev/null']),
        'touch "$STARTED"',
        'while [ ! -e "$GO" ]; do sleep 0.1; done',
        `printf '{"answer":"42"}' > "$KRT_OUTPUTS_FILE"`,
        `exit ${String(code)}`,
        '',
      ].join('\n'),
    },
    mode: { task: {} },
    timeout: `${String(timeout)}s`,
    env: [
      { name: 'STARTED', value: started },
      { name: 'GO', value: go },
      { name: 'EXECUTIONS', value: executions },
    ],
    retryPolicy: { maxAttempts: 1 },
    ...(artifacts === undefined ? {} : { artifacts }),
  });
  const bound = await env.bind(name, pod);
  const uid = bound.metadata.uid ?? '';
  await waitFor('the task to start', () => exists(started), WAIT);

  const mine = (line: Record<string, unknown>): boolean => line.runUID === uid;
  await controlPlane.stopApiServer();
  try {
    await writeFile(go, '');
    await waitFor(
      'runtimed to fail writing the outcome',
      async () =>
        (await env.logs('bash-0', 'runtimed')).some((line) => mine(line) && line.msg === 'writing the task outcome failed')
          ? true
          : undefined,
      WAIT,
    );
    // Recorded on the Pod before the workspace went.
    expect(await recordsOf(uid)).toHaveLength(1);
    const before = (await env.logs('bash-0', 'runtimed')).length;
    env.node.crashContainer(env.name, 'bash-0', 'runtimed', 'SIGKILL');
    // Started again by the Pod's restart policy; it cannot start while the API server is down.
    await waitFor(
      'runtimed to be started again and fail to start without the API server',
      async () =>
        (await env.logs('bash-0', 'runtimed')).slice(before).some((line) => line.msg === 'runtimed failed to start') ? true : undefined,
      WAIT,
    );
    await meanwhile?.(uid);
  } finally {
    await controlPlane.startApiServer();
  }

  // Within the lifetime bound and some margin: an outcome lost again would end it Timeout.
  const ended = await env.waitForRun(name, 'terminal', (run: Run) => isTerminal(currentPhase(run)), (timeout + 20) * 1000);
  const said = await saidUntil(uid, last);
  return { uid, ended, executions: await readFile(executions, 'utf8'), said };
}

/**
 * runtimed's messages about Run `uid` once `last` is among them, or as they are at the wait's
 * bound (the expectations then show what was said instead). The Run's status can show an
 * outcome before runtimed's line about it reached the log file through the node's pipe: a
 * loaded run read the log at that moment and missed the line.
 */
async function saidUntil(uid: string, last: string): Promise<unknown[]> {
  const deadline = performance.now() + WAIT.timeoutMs;
  for (;;) {
    const said = (await env.logs('bash-0', 'runtimed')).filter((line) => line.runUID === uid).map((line) => line.msg);
    if (said.includes(last) || performance.now() > deadline) return said;
    await new Promise((resolve) => setTimeout(resolve, WAIT.intervalMs));
  }
}

/**
 * The outcome records of a Run kept in the test Pod's workspace emptyDir, relative to the
 * state directory (each container's root links to the volume: only the volume is looked at).
 */
async function recordsOf(uid: string): Promise<string[]> {
  const paths = await readdir(env.stateDir, { recursive: true });
  return paths.filter(
    (path) =>
      dirname(path).endsWith(join('volumes', 'workspaces', '.outcomes')) &&
      /^[0-9a-f-]+\.[0-9]+\.json$/.test(basename(path)) &&
      basename(path).startsWith(`${uid}.`),
  );
}
