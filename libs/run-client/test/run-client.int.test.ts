// The typed clients and the fenced status writer against the real control plane: NotFound and
// Conflict come back as values, and a transition written on a stale version is fenced.
import type { Run, RunSchedule } from '@kruntimes/api';
import { Cluster } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { kruntimesClients, projectedRun, transitionSpec, writeTransition } from '../src/index.ts';

const cluster = Cluster.fromEnvironment();
const { runs, runSchedules } = kruntimesClients(cluster.kubeConfig());
const NOW = '2026-06-01T12:00:00Z';
const BIND = { type: 'Bind', pod: 'pod-a', podUID: 'pod-uid-a' } as const;

let namespace: TestNamespace;
beforeEach(async () => {
  namespace = await cluster.createNamespace({ prefix: 'run-client' });
});
afterEach(async () => {
  await namespace.delete();
});

function newRun(name: string): Run {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name, namespace: namespace.name },
    spec: { runtime: 'python', source: { inline: 'print(1)' }, mode: { task: {} } },
  };
}

async function created(name: string): Promise<Run> {
  const result = await runs.create(namespace.name, newRun(name));
  if (!result.ok) throw new Error(`create refused: ${result.reason}`);
  return result.object;
}

test('NotFound is undefined for a read and a value for every write', async () => {
  const ghost = { ...newRun('ghost'), metadata: { name: 'ghost', namespace: namespace.name, resourceVersion: '1' } };
  expect(await runs.get(namespace.name, 'ghost')).toBeUndefined();
  expect(await runs.replaceStatus(ghost, { phase: 'Pending' })).toMatchObject({ ok: false, reason: 'NotFound' });
  expect(await runs.replace(ghost)).toMatchObject({ ok: false, reason: 'NotFound' });
  expect(await runs.mergePatch(namespace.name, 'ghost', { metadata: { labels: { a: 'b' } } })).toMatchObject({
    ok: false,
    reason: 'NotFound',
  });
  expect(await runs.delete(namespace.name, 'ghost')).toMatchObject({ ok: false, reason: 'NotFound' });
  expect(await writeTransition(runs, { namespace: namespace.name, name: 'ghost' }, BIND, { writer: 'scheduler', now: () => NOW })).toEqual({
    ok: false,
    reason: 'NotFound',
  });
});

test('create, get, list, merge patch and delete; a taken name is AlreadyExists', async () => {
  const run = await created('r');
  expect(await runs.create(namespace.name, newRun('r'))).toMatchObject({ ok: false, reason: 'AlreadyExists' });
  expect((await runs.get(namespace.name, 'r'))?.metadata.uid).toBe(run.metadata.uid);
  expect((await runs.list(namespace.name)).map((r) => r.metadata.name)).toEqual(['r']);
  const patched = await runs.mergePatch(namespace.name, 'r', { metadata: { labels: { team: 'a' } } });
  expect(patched.ok && patched.object.metadata.labels).toEqual({ team: 'a' });
  expect(await runs.delete(namespace.name, 'r', { preconditions: { uid: 'another-uid' } })).toMatchObject({
    ok: false,
    reason: 'Conflict',
  });
  expect(await runs.delete(namespace.name, 'r')).toEqual({ ok: true, object: undefined });
  expect(await runSchedules.get(namespace.name, 'none')).toBeUndefined();
  expect(await runSchedules.list(namespace.name)).toEqual<RunSchedule[]>([]);
});

test('writes fenced on a stale resourceVersion are Conflict; a patch carrying it too', async () => {
  const stale = await created('r');
  const patched = await runs.mergePatch(namespace.name, 'r', { metadata: { labels: { moved: 'on' } } });
  expect(patched.ok).toBe(true);
  expect(await runs.replaceStatus(stale, { phase: 'Pending' })).toMatchObject({ ok: false, reason: 'Conflict' });
  expect(await runs.replace(stale)).toMatchObject({ ok: false, reason: 'Conflict' });
  const fencedPatch = { metadata: { resourceVersion: stale.metadata.resourceVersion ?? '', finalizers: [] } };
  expect(await runs.mergePatch(namespace.name, 'r', fencedPatch)).toMatchObject({ ok: false, reason: 'Conflict' });
});

test('writeTransition on a stale version: Conflict without retries; with one, written on the live Run', async () => {
  const stale = await created('r');
  await runs.mergePatch(namespace.name, 'r', { metadata: { labels: { moved: 'on' } } });
  let conflicts = 0;
  const options = { writer: 'scheduler' as const, now: () => NOW, onConflict: () => (conflicts += 1) };
  expect(await writeTransition(runs, stale, BIND, options)).toMatchObject({ ok: false, reason: 'Conflict' });
  const result = await writeTransition(runs, stale, BIND, { ...options, retries: 1 });
  expect(conflicts).toBe(2);
  expect(result.ok && result.object.status).toMatchObject({ phase: 'Scheduled', assignedPod: 'pod-a', assignedPodUID: 'pod-uid-a' });
  // Bound now: the state machine refuses a second bind on the live Run, and nothing is written.
  const again = await writeTransition(runs, { namespace: namespace.name, name: 'r' }, BIND, { ...options, retries: 5 });
  expect(again).toMatchObject({ ok: false, reason: 'Refused' });
});

test('a status write of a projected Run (a cache that dropped the source, env and labels) keeps the stored spec and is still fenced', async () => {
  const full: Run = {
    ...newRun('projected'),
    metadata: { name: 'projected', namespace: namespace.name, labels: { team: 'a' }, annotations: { note: 'kept' } },
    spec: {
      runtime: 'python',
      source: { inline: 'print("the whole program")\n'.repeat(20) },
      mode: { task: { args: ['--flag'] } },
      env: [{ name: 'A', value: 'b' }],
      timeout: '5m',
    },
  };
  const createdRun = await runs.create(namespace.name, full);
  if (!createdRun.ok) throw new Error(`create refused: ${createdRun.reason}`);
  const stored = createdRun.object;
  // What a cache projection keeps: no source text, env, args, timeout, labels or annotations.
  const projected = projectedRun(stored, transitionSpec(stored.spec), stored.status);
  expect(projected.spec).toEqual({ runtime: 'python', source: {}, mode: { task: {} }, cancelRequested: false });

  const written = await writeTransition(runs, projected, BIND, { writer: 'scheduler', now: () => NOW });
  expect(written.ok && written.object.status).toMatchObject({ phase: 'Scheduled', assignedPod: 'pod-a' });
  const live = await runs.get(namespace.name, 'projected');
  expect(live?.spec).toEqual(stored.spec);
  expect(live?.metadata.labels).toEqual({ team: 'a' });
  expect(live?.metadata.annotations).toEqual({ note: 'kept' });
  expect(live?.status).toMatchObject({ phase: 'Scheduled', assignedPod: 'pod-a', assignedPodUID: 'pod-uid-a' });

  // The projection of the version before the bind is stale: fenced on its resourceVersion.
  const unschedulable = { type: 'Unschedulable', reason: 'NoReadyPods', message: 'no ready Pod' } as const;
  const stale = await writeTransition(runs, projected, unschedulable, { writer: 'scheduler', now: () => NOW });
  expect(stale).toMatchObject({ ok: false, reason: 'Conflict' });
  expect((await runs.get(namespace.name, 'projected'))?.status?.phase).toBe('Scheduled');
});
