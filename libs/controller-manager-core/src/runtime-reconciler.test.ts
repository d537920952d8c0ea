import type { V1Deployment, V1Pod, V1PodDisruptionBudget, V1Secret, V1Service } from '@kubernetes/client-node';
import { CONDITION_TYPES, RUNTIME_REASONS } from '@kruntimes/api';
import type { Run, Runtime, RuntimeStatus } from '@kruntimes/api';
import { asReconciler } from '@kruntimes/controller-runtime';
import { FakeCache, FakeOwnedObjects, RecordingLogger } from '@kruntimes/controller-runtime/testing';
import { FakeObjectClient } from '@kruntimes/run-client/testing';
import type { WorkloadConfig } from '@kruntimes/runtime-workload';
import { createCertificateAuthority } from '@kruntimes/workload-pki';
import type { CertificateAuthority } from '@kruntimes/workload-pki';
import { PoolDecisions } from './pool-decisions.ts';
import { RuntimeReconciler } from './runtime-reconciler.ts';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const WORKLOAD: WorkloadConfig = {
  runtimedImage: 'kruntimes/runtimed:1.0',
  runtimeServerImages: { python: 'kruntimes/runtime-server-python:1.0', bash: 'kruntimes/runtime-server-bash:1.0' },
  serviceAccountName: 'kruntimes-runtimed',
  runtimeServerListen: 'loopback',
};

let internalCa: CertificateAuthority;
beforeAll(async () => {
  internalCa = await createCertificateAuthority({ now: new Date(NOW - 60_000) });
});

function runtime(name = 'python', status?: RuntimeStatus): Runtime {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Runtime',
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: '4', generation: 1 },
    spec: { language: 'python' },
    ...(status === undefined ? {} : { status }),
  };
}

function pendingRun(name: string): Run {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name, namespace: 'ns', uid: `uid-${name}` },
    spec: { runtime: 'python', source: { inline: 'x' }, mode: { task: {} } },
    status: { phase: 'Pending' },
  };
}

function harness(live: Runtime, runs: Run[] = []) {
  const caches = {
    runs: new FakeCache<Run>(runs),
    pods: new FakeCache<V1Pod>(),
    deployments: new FakeCache<V1Deployment>(),
    services: new FakeCache<V1Service>(),
    disruptionBudgets: new FakeCache<V1PodDisruptionBudget>(),
    secrets: new FakeCache<V1Secret>(),
  };
  const objects = new FakeOwnedObjects();
  const runtimes = new FakeObjectClient<Runtime>([live]);
  const reconciler = new RuntimeReconciler({
    caches,
    objects,
    runtimes,
    logger: new RecordingLogger(),
    workload: WORKLOAD,
    internalCa,
    pools: new PoolDecisions(),
    now: () => NOW,
  });
  const runtimeCache = new FakeCache<Runtime>([live]);
  const key = `ns/${live.metadata.name ?? ''}`;
  const reconcile = () => asReconciler(runtimeCache, reconciler)(key, new AbortController().signal);
  /** The watch events of what was written: the caches show the objects and the status as the API server holds them. */
  const observeWrites = (): void => {
    caches.secrets.set(...objects.held('Secret'));
    caches.deployments.set(...objects.held('Deployment'));
    caches.services.set(...objects.held('Service'));
    caches.disruptionBudgets.set(...objects.held('PodDisruptionBudget'));
    const written = runtimes.live('ns', live.metadata.name ?? '');
    if (written !== undefined) runtimeCache.set(written);
  };
  const status = () => runtimes.live('ns', live.metadata.name ?? '')?.status;
  return { caches, objects, runtimes, runtimeCache, reconcile, observeWrites, status };
}

const conditionOf = (status: RuntimeStatus | undefined, type: string) => status?.conditions?.find((c) => c.type === type);

test('a new Runtime: its TLS Secret first, then Deployment, Service and PodDisruptionBudget are created, and the status written', async () => {
  const { objects, runtimes, reconcile, status } = harness(runtime());

  await reconcile();

  expect(objects.writes).toEqual(
    ['Secret ns/python-runtimed-tls', 'Deployment ns/python', 'Service ns/python', 'PodDisruptionBudget ns/python'].map((object) => ({
      verb: 'create',
      object,
      outcome: 'ok',
    })),
  );
  expect(runtimes.writes.map((write) => [write.verb, write.outcome])).toEqual([['replaceStatus', 'ok']]);
  expect(conditionOf(status(), CONDITION_TYPES.available)).toMatchObject({ status: 'False', reason: RUNTIME_REASONS.noPodsReady });
});

test('once the caches show what was written, a reconcile writes nothing and comes back at the certificate’s renewal', async () => {
  const { objects, runtimes, reconcile, observeWrites } = harness(runtime());
  await reconcile();
  observeWrites();
  // The cached Deployment brings the rollout into the status: one more status write.
  await reconcile();
  observeWrites();
  const writes = objects.writes.length + runtimes.writes.length;

  const result = await reconcile();

  expect(objects.writes.length + runtimes.writes.length).toBe(writes);
  expect(result?.requeueAfterMs).toBeGreaterThan(0);
});

test('a Runtime whose spec cannot be run: nothing is created, Available and Progressing False (InvalidSpec)', async () => {
  const { objects, reconcile, status } = harness(runtime('Not_A_DNS_Label'));

  await expect(reconcile()).resolves.toBeUndefined();

  expect(objects.writes).toEqual([]);
  for (const type of [CONDITION_TYPES.available, CONDITION_TYPES.progressing])
    expect(conditionOf(status(), type)).toMatchObject({ status: 'False', reason: RUNTIME_REASONS.invalidSpec });
});

test('a Deployment of the same name controlled by another owner is never changed: reported in the status', async () => {
  const { caches, objects, reconcile, status } = harness(runtime());
  caches.deployments.set({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'python', namespace: 'ns', uid: 'theirs', resourceVersion: '2' },
  });

  await reconcile();

  expect(objects.writes.map((write) => write.object)).not.toContain('Deployment ns/python');
  expect(conditionOf(status(), CONDITION_TYPES.available)).toMatchObject({ status: 'False', reason: RUNTIME_REASONS.invalidSpec });
});

test('the Runs waiting for the Runtime are counted from the Run cache', async () => {
  const { reconcile, status } = harness(runtime(), [pendingRun('a'), pendingRun('b')]);

  await reconcile();

  expect(status()?.pendingRuns).toBe(2);
});

test.each(['Conflict', 'NotFound'] as const)(
  'a status write refused (%s) is no error: the watch event reconciles again',
  async (refusal) => {
    const { runtimes, reconcile } = harness(runtime());
    runtimes.refuse('replaceStatus', 'ns/python', refusal);

    await expect(reconcile()).resolves.toBeUndefined();

    expect(runtimes.writes.map((write) => write.outcome)).toEqual([refusal]);
  },
);

test('a Runtime deleted (gone from the cache) or being deleted: nothing is created or written', async () => {
  const deleted = harness(runtime());
  deleted.runtimeCache.delete('python', 'ns');
  const deleting = harness(runtime());
  deleting.runtimeCache.set({ ...runtime(), metadata: { ...runtime().metadata, deletionTimestamp: '2026-06-01T11:59:00Z' } });

  for (const { objects, runtimes, reconcile } of [deleted, deleting]) {
    await expect(reconcile()).resolves.toBeUndefined();
    expect([...objects.writes, ...runtimes.writes]).toEqual([]);
  }
});
