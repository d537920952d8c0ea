// The execution snapshot (issue 26) end to end, on the full system: a Run whose source is a
// ConfigMap key runs the bytes resolved before its first binding, whatever happens to the
// ConfigMap afterwards: after a lost owner, and in `krt retry` (unless --refresh-source);
// runtimed refuses a snapshot that is not the recorded digest and runs nothing; a missing
// ConfigMap keeps the Run Pending with its reason, then Failed after the (shortened) wait.
// Which program ran is told by its exit: v1 exits 0, every edit exits 7.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { API_GROUP, CONDITION_TYPES, RUN_PLURAL, RUNTIME_USER_RULES, SOURCE_SNAPSHOT } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { System } from '@kruntimes/e2e';
import { currentPhase, findCondition, finishKind } from '@kruntimes/run-state';
import { NamespaceAccess, kubeconfigYaml } from '@kruntimes/testing';
import { runKrt } from './run-krt.ts';

const CLI_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = 240_000;
const SOURCE_WAIT_MS = 5_000;

let system: System;
let kubeconfig = '';

beforeAll(async () => {
  system = await System.start({
    prefix: 'krt-snapshot',
    staleRecovery: true,
    sourceWaitMs: SOURCE_WAIT_MS,
    podEnv: { KRT_LEASE_DURATION_SECONDS: '4', KRT_LEASE_RENEW_SECONDS: '1' },
  });
  await new NamespaceAccess(system.cluster, system.name).grantUser('alice', 'run-user', [
    { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list', 'watch', 'create'] },
    // Creating a Run needs `use` on its Runtime (the admission policy).
    ...RUNTIME_USER_RULES,
  ]);
  kubeconfig = join(system.dir, 'alice.kubeconfig');
  await writeFile(
    kubeconfig,
    kubeconfigYaml({ server: system.cluster.info.server, caPem: system.cluster.info.caPem, user: 'alice', token: system.token('alice') }),
    { mode: 0o600 },
  );
  await system.createRuntime('sh', { language: 'bash', replicas: 2, runs: 2 });
  await system.waitRuntimeReady('sh', 2);
}, 180_000);

afterAll(async () => {
  await system.stop();
});

const finished = (run: Run): boolean => finishKind(currentPhase(run)) !== undefined;

async function writeConfigMap(name: string, text: string): Promise<void> {
  const body = { metadata: { name }, data: { 'main.sh': text } };
  const exists = await system.core.readNamespacedConfigMap({ namespace: system.name, name }).catch(() => undefined);
  if (exists === undefined) await system.core.createNamespacedConfigMap({ namespace: system.name, body });
  else await system.core.replaceNamespacedConfigMap({ namespace: system.name, name, body });
}

async function createTask(name: string, runtime: string, configMap: string, spec: Partial<Run['spec']> = {}): Promise<void> {
  await system.objects.createNamespacedCustomObject({
    group: API_GROUP,
    version: 'v1alpha1',
    namespace: system.name,
    plural: RUN_PLURAL,
    body: {
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata: { name },
      spec: { runtime, source: { configMapKeyRef: { name: configMap, key: 'main.sh' } }, mode: { task: {} }, ...spec },
    },
  });
}

function krt(args: string[]): ReturnType<typeof runKrt> {
  return runKrt(args, { kubeconfig, namespace: system.name, timeoutMs: CLI_TIMEOUT_MS });
}

/** The outcome that tells which program ran. */
const outcome = (run: Run) => ({ phase: currentPhase(run), reason: run.status?.reason, exitCode: run.status?.exitCode });

test(
  'a ConfigMap edited while the owner is lost does not change what the next attempt runs; the snapshot is an immutable ConfigMap owned by the Run',
  async () => {
    // Attempt 1 sleeps (its owner is lost meanwhile), attempt 2 of v1 exits 0.
    await writeConfigMap('lost-src', 'if [ "$KRT_ATTEMPT" = "1" ]; then sleep 600; fi\necho v1\n');
    await createTask('lost', 'sh', 'lost-src', { retryPolicy: { retrySafe: true, maxAttempts: 2, initialBackoffSeconds: 1 } });
    const running = await system.waitForRun('lost', 'Running', (run) => currentPhase(run) === 'Running' || finished(run));
    expect(currentPhase(running)).toBe('Running');
    const source = running.status?.source;
    expect(source?.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const snapshot = await system.core.readNamespacedConfigMap({ namespace: system.name, name: source?.configMapName ?? '' });
    expect(snapshot.immutable).toBe(true);
    expect(snapshot.metadata?.ownerReferences?.map((owner) => owner.uid)).toEqual([running.metadata.uid]);
    expect(findCondition(running.status?.conditions, CONDITION_TYPES.sourceResolved)?.status).toBe('True');

    await writeConfigMap('lost-src', 'echo v2\nexit 7\n');
    await system.core.deleteNamespacedPod({ namespace: system.name, name: running.status?.assignedPod ?? '', gracePeriodSeconds: 0 });
    const done = await system.waitForRun('lost', 'finished', finished, 150_000);
    expect({ ...outcome(done), attempt: done.status?.attempt }).toEqual({
      phase: 'Succeeded',
      reason: 'Succeeded',
      exitCode: 0,
      attempt: 2,
    });
    expect(done.status?.source).toEqual(source);
  },
  TEST_TIMEOUT_MS,
);

test(
  'krt retry runs the parent snapshot (same digest) after the ConfigMap was edited; krt retry --refresh-source picks the edit up; get -o wide shows the digest',
  async () => {
    await writeConfigMap('retry-src', 'echo retry v1\n');
    await createTask('once', 'sh', 'retry-src');
    const parent = await system.waitForRun('once', 'finished', finished, 120_000);
    expect(outcome(parent)).toEqual({ phase: 'Succeeded', reason: 'Succeeded', exitCode: 0 });
    await writeConfigMap('retry-src', 'echo retry v2\nexit 7\n');

    // Not retrySafe: the retry may repeat its side effects, so it is confirmed with --yes.
    const retried = await krt(['retry', 'once', '--yes']);
    expect(retried.code).toBe(0);
    const name = /^run\/(once-retry-[a-z0-9]{5})\n$/.exec(retried.stdout)?.[1] ?? '';
    expect(retried.stderr).toContain(`the source snapshot ${(parent.status?.source?.digest ?? '').slice(0, 19)}`);
    const retry = await system.waitForRun(name, 'finished', finished, 120_000);
    expect(outcome(retry)).toEqual({ phase: 'Succeeded', reason: 'Succeeded', exitCode: 0 });
    expect(retry.status?.source?.digest).toBe(parent.status?.source?.digest);
    const shared = await system.core.readNamespacedConfigMap({ namespace: system.name, name: retry.status?.source?.configMapName ?? '' });
    expect(shared.metadata?.ownerReferences?.map((owner) => owner.uid).sort()).toEqual([parent.metadata.uid, retry.metadata.uid].sort());

    const wide = await krt(['get', name, '-o', 'wide']);
    expect(wide.stdout).toContain((parent.status?.source?.digest ?? '').slice(0, 'sha256:'.length + 12));

    const refreshed = await krt(['retry', 'once', '--refresh-source', '--yes']);
    expect(refreshed.code).toBe(0);
    const refreshedName = /^run\/(once-retry-[a-z0-9]{5})\n$/.exec(refreshed.stdout)?.[1] ?? '';
    const fresh = await system.waitForRun(refreshedName, 'finished', finished, 120_000);
    expect(outcome(fresh)).toEqual({ phase: 'Failed', reason: 'NonZeroExit', exitCode: 7 });
    expect(fresh.status?.source?.digest).not.toBe(parent.status?.source?.digest);
  },
  TEST_TIMEOUT_MS,
);

test(
  'a tampered snapshot (deleted and recreated with other bytes) is refused by runtimed: Failed SourceDigestMismatch, nothing ran',
  async () => {
    await writeConfigMap('tamper-src', 'echo tamper v1\n');
    // No Runtime "later" yet: the snapshot is made (before any binding) and the Run waits.
    await createTask('tampered', 'later', 'tamper-src');
    const waiting = await system.waitForRun('tampered', 'snapshotted', (run) => run.status?.source !== undefined);
    const name = waiting.status?.source?.configMapName ?? '';
    await system.core.deleteNamespacedConfigMap({ namespace: system.name, name });
    await system.core.createNamespacedConfigMap({
      namespace: system.name,
      body: { metadata: { name }, immutable: true, data: { [SOURCE_SNAPSHOT.key]: 'echo tampered\nexit 0\n' } },
    });
    await system.createRuntime('later', { language: 'bash' });
    const done = await system.waitForRun('tampered', 'finished', finished, 150_000);
    expect(outcome(done)).toEqual({ phase: 'Failed', reason: 'SourceDigestMismatch', exitCode: undefined });
    expect(done.status?.message).toMatch(/nothing ran: snapshot ConfigMap krt-src-[0-9a-f]{20}: the source to run is sha256:[0-9a-f]{64}/);
    expect(done.status?.startTime).toBeDefined(); // claimed, then refused before anything ran
  },
  TEST_TIMEOUT_MS,
);

test(
  'a function Run whose snapshot was tampered with is refused before it registers: Failed SourceDigestMismatch, no finalizer left',
  async () => {
    await writeConfigMap('tamper-fn-src', 'handle() { echo "{\\"v\\": 1}"; }\n');
    await createTask('tampered-fn', 'later-fn', 'tamper-fn-src', { mode: { function: { handler: 'handle' } } });
    const waiting = await system.waitForRun('tampered-fn', 'snapshotted', (run) => run.status?.source !== undefined);
    const name = waiting.status?.source?.configMapName ?? '';
    await system.core.deleteNamespacedConfigMap({ namespace: system.name, name });
    await system.core.createNamespacedConfigMap({
      namespace: system.name,
      body: { metadata: { name }, immutable: true, data: { [SOURCE_SNAPSHOT.key]: 'handle() { echo "{}"; }\n' } },
    });
    await system.createRuntime('later-fn', { language: 'bash' });
    const done = await system.waitForRun('tampered-fn', 'finished', finished, 150_000);
    expect(outcome(done)).toEqual({ phase: 'Failed', reason: 'SourceDigestMismatch', exitCode: undefined });
    expect(done.status?.endpoint).toBeUndefined();
    expect(done.metadata.finalizers ?? []).toEqual([]);
  },
  TEST_TIMEOUT_MS,
);

test(
  'a missing ConfigMap leaves the Run Pending with reason SourceNotFound, never bound, then Failed after the wait',
  async () => {
    await createTask('missing', 'sh', 'no-such-configmap');
    const waiting = await system.waitForRun('missing', 'SourceNotFound', (run) => run.status?.reason === 'SourceNotFound' || finished(run));
    expect(currentPhase(waiting)).toBe('Pending');
    expect(findCondition(waiting.status?.conditions, CONDITION_TYPES.sourceResolved)).toMatchObject({
      status: 'False',
      reason: 'SourceNotFound',
    });
    const done = await system.waitForRun('missing', 'finished', finished, 60_000);
    expect(outcome(done)).toEqual({ phase: 'Failed', reason: 'SourceNotFound', exitCode: undefined });
    expect(done.status?.assignedPod).toBeUndefined();
    expect(done.status?.attempt).toBeUndefined();
    expect(done.status?.message).toMatch(
      /ConfigMap no-such-configmap key main.sh: the ConfigMap does not exist \(still after waiting 5s\)/,
    );
  },
  TEST_TIMEOUT_MS,
);
