// The retention controller of the controller-manager, with exactly the chart's RBAC, against the
// real control plane and the real object store (SeaweedFS).
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import {
  API_GROUP,
  API_VERSION,
  ARTIFACT_STORE_PLURAL,
  ARTIFACT_STORE_REASONS,
  artifactNamespacePrefix,
  artifactObjectKey,
  RUN_PLURAL,
} from '@kruntimes/api';
import type { ArtifactStore, Run, RunSpec } from '@kruntimes/api';
import type { ControllerLogger } from '@kruntimes/controller-runtime';
import { transition } from '@kruntimes/run-state';
import type { RunEvent, WriterRole } from '@kruntimes/run-state';
import { Cluster, NamespaceAccess, ObjectStore, waitFor, testWorkloadConfig } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { createCertificateAuthority } from '@kruntimes/workload-pki';
import type { CertificateAuthority } from '@kruntimes/workload-pki';
import { CONTROLLER_MANAGER_RULES } from '../src/rbac.ts';
import { ControllerManager } from '../src/manager.ts';

const BUCKET = 'retention';
const PREFIX = 'krt';
const WAIT = { timeoutMs: 30_000, intervalMs: 200 };
const cluster = Cluster.fromEnvironment();
const admin = cluster.kubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const objects = admin.makeApiClient(CustomObjectsApi);

let store: ObjectStore;
let internalCa: CertificateAuthority;
let namespace: TestNamespace;
let manager: ControllerManager | undefined;
let errors: object[];

beforeAll(async () => {
  internalCa = await createCertificateAuthority();
  store = await ObjectStore.start();
  await store.createBucket(BUCKET);
});
afterAll(async () => {
  await store.stop();
});

beforeEach(async () => {
  errors = [];
  namespace = await cluster.createNamespace({ prefix: 'artifact-retention' });
});
afterEach(async () => {
  await manager?.stop();
  manager = undefined;
  await namespace.delete();
  expect(errors).toEqual([]);
});

const logger: ControllerLogger = { error: (object, message) => errors.push({ ...object, message }), debug: () => undefined };
const custom = (plural: string) => ({ group: API_GROUP, version: API_VERSION, namespace: namespace.name, plural });

async function startManager(): Promise<void> {
  manager = new ControllerManager({
    // Least privilege: exactly the rules the chart grants, so a missing one fails here.
    kubeConfig: await new NamespaceAccess(cluster, namespace.name).serviceAccountKubeConfig('controller-manager', CONTROLLER_MANAGER_RULES),
    internalCa,
    namespace: namespace.name,
    logger,
    workload: testWorkloadConfig({ terminationGracePeriodSeconds: 2 }),
    artifactCleanupIntervalMs: 1_000,
    // Every Run of this test is in the cache before its objects are written.
    artifactUnknownRunGraceMs: 0,
  });
  await manager.start();
}

async function createRun(name: string, spec: Partial<RunSpec> = {}): Promise<Run> {
  const body: Run = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name },
    spec: { runtime: 'none', source: { inline: 'echo hi' }, mode: { task: {} }, ...spec },
  };
  return (await objects.createNamespacedCustomObject({ ...custom(RUN_PLURAL), body })) as Run;
}

/** Plays the scheduler and runtimed: each step a status write through the state machine. */
async function act(name: string, steps: [WriterRole, RunEvent][]): Promise<Run> {
  let run = (await objects.getNamespacedCustomObject({ ...custom(RUN_PLURAL), name })) as Run;
  for (const [writer, event] of steps) {
    const result = transition({ run, event, writer, now: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') });
    if (!result.ok) throw result.error;
    run = (await objects.replaceNamespacedCustomObjectStatus({
      ...custom(RUN_PLURAL),
      name,
      body: { ...run, status: result.status },
    })) as Run;
  }
  return run;
}

const bind: [WriterRole, RunEvent] = ['scheduler', { type: 'Bind', pod: 'p', podUID: '00000000-0000-4000-8000-000000000001' }];
const claim: [WriterRole, RunEvent] = ['runtimed', { type: 'Claim' }];
const requeue: [WriterRole, RunEvent] = ['runtimed', { type: 'Requeue', cause: 'attemptFailed', backoffSeconds: 0, message: 'exit 1' }];
const succeed: [WriterRole, RunEvent] = ['runtimed', { type: 'Succeeded' }];

async function createSecret(): Promise<void> {
  await core.createNamespacedSecret({
    namespace: namespace.name,
    body: {
      metadata: { name: 'store-credentials' },
      stringData: { accessKeyId: store.credentials.accessKeyId, secretAccessKey: store.credentials.secretAccessKey },
    },
  });
}

async function createStore(retention: string): Promise<void> {
  const body: ArtifactStore = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'ArtifactStore',
    metadata: { name: 'main' },
    spec: {
      endpoint: store.endpoint,
      bucket: BUCKET,
      prefix: PREFIX,
      credentialsSecretRef: { name: 'store-credentials' },
      retentionAfterRunDeleted: retention,
    },
  };
  await objects.createNamespacedCustomObject({ ...custom(ARTIFACT_STORE_PLURAL), body });
}

async function getStore(): Promise<ArtifactStore> {
  return (await objects.getNamespacedCustomObject({ ...custom(ARTIFACT_STORE_PLURAL), name: 'main' })) as ArtifactStore;
}

function key(run: Run, attempt: number, id = 'out.csv'): string {
  return artifactObjectKey(PREFIX, namespace.name, run.metadata.uid ?? '', attempt, id);
}

test('retention 0s: a deleted Run’s object and a superseded attempt’s objects are removed; a live Run’s current attempt, a terminal Run’s final attempt, non-artifact keys and other namespaces stay; Ready is True', async () => {
  const retrySafe = { retryPolicy: { retrySafe: true, maxAttempts: 3 } };
  await createRun('live', retrySafe);
  const live = await act('live', [bind, claim, requeue, bind, claim]);
  await createRun('done', retrySafe);
  const done = await act('done', [bind, claim, requeue, bind, claim, succeed]);
  const gone = await createRun('gone');
  await objects.deleteNamespacedCustomObject({ ...custom(RUN_PLURAL), name: 'gone' });
  const liveAttempt = live.status?.attempt ?? 0;
  const doneAttempt = done.status?.attempt ?? 0;
  expect([liveAttempt, doneAttempt, done.status?.phase]).toEqual([2, 2, 'Succeeded']);

  const removed = [key(gone, 1), key(live, 1), key(done, 1), key(done, 3)];
  const kept = [
    key(live, liveAttempt),
    key(live, liveAttempt, 'second.json'),
    key(done, doneAttempt),
    `${artifactNamespacePrefix(PREFIX, namespace.name)}README`,
    artifactObjectKey(PREFIX, `${namespace.name}-other`, gone.metadata.uid ?? '', 1, 'out.csv'),
  ];
  for (const k of [...removed, ...kept]) await store.putObject(BUCKET, k, 'x');

  await createSecret();
  await createStore('0s');
  await startManager();

  await waitFor(
    'only the kept objects left',
    async () => {
      const keys = await store.listKeys(BUCKET, `${PREFIX}/${namespace.name}`);
      return JSON.stringify(keys) === JSON.stringify([...kept].sort()) ? keys : undefined;
    },
    WAIT,
  );
  const status = await waitFor('the Ready condition', async () => (await getStore()).status, WAIT);
  expect(status.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
    status: 'True',
    reason: ARTIFACT_STORE_REASONS.storeReachable,
    observedGeneration: 1,
  });
  expect(Date.parse(status.lastCleanupTime ?? '')).toBeGreaterThan(Date.now() - 60_000);
});

test('waiting for input: the checkpoint an active Run waits with or continues from stays; other objects of past attempts go', async () => {
  const retrySafe = { retryPolicy: { retrySafe: true, maxAttempts: 3 } };
  const digest = `sha256:${'c'.repeat(64)}`;
  const wait: [WriterRole, RunEvent] = ['runtimed', { type: 'WaitForInput', schema: 'true', checkpoint: { digest, size: 1 } }];
  const answer: [WriterRole, RunEvent] = ['controller-manager', { type: 'InputReceived', responseId: 'r', runInput: 'i', input: '{}' }];
  await createRun('waiting', retrySafe);
  // Attempt 1 failed, attempt 2 waits with its checkpoint.
  const waiting = await act('waiting', [bind, claim, requeue, bind, claim, wait]);
  await createRun('resumed', retrySafe);
  // Attempt 1 waited, attempt 2 continues from its checkpoint and runs.
  const resumed = await act('resumed', [bind, claim, wait, answer, bind, claim]);
  expect([waiting.status?.phase, waiting.status?.attempt, resumed.status?.phase, resumed.status?.attempt]).toEqual([
    'WaitingInput',
    2,
    'Running',
    2,
  ]);
  const kept = [key(waiting, 2, 'krt.checkpoint'), key(resumed, 1, 'krt.checkpoint'), key(resumed, 2, 'out.csv')];
  const removed = [key(waiting, 1, 'krt.checkpoint'), key(waiting, 1), key(resumed, 1)];
  for (const k of [...removed, ...kept]) await store.putObject(BUCKET, k, 'x');

  await createSecret();
  await createStore('0s');
  await startManager();
  await waitFor(
    'only the kept objects left',
    async () => {
      const keys = await store.listKeys(BUCKET, `${PREFIX}/${namespace.name}`);
      return JSON.stringify(keys) === JSON.stringify([...kept].sort()) ? keys : undefined;
    },
    WAIT,
  );
});

test('retention 24h: a deleted Run’s object is kept until its retention ends', async () => {
  const gone = await createRun('gone');
  await objects.deleteNamespacedCustomObject({ ...custom(RUN_PLURAL), name: 'gone' });
  await store.putObject(BUCKET, key(gone, 1), 'x');
  await createSecret();
  await createStore('24h');
  await startManager();
  await waitFor('a finished pass', async () => (await getStore()).status?.lastCleanupTime, WAIT);
  expect(await store.listKeys(BUCKET, `${PREFIX}/${namespace.name}/`)).toEqual([key(gone, 1)]);
});

test('Ready is False with SecretNotFound while the credentials Secret is missing, and flips to True once it exists', async () => {
  await createStore('0s');
  await startManager();
  const notReady = await waitFor(
    'Ready False',
    async () => {
      const ready = (await getStore()).status?.conditions?.find((c) => c.type === 'Ready');
      return ready?.status === 'False' ? ready : undefined;
    },
    WAIT,
  );
  expect(notReady).toMatchObject({ reason: ARTIFACT_STORE_REASONS.secretNotFound, observedGeneration: 1 });
  expect(notReady.message).toMatch(/store-credentials.* not found/);

  await createSecret();
  const ready = await waitFor(
    'Ready True',
    async () => {
      const condition = (await getStore()).status?.conditions?.find((c) => c.type === 'Ready');
      return condition?.status === 'True' ? condition : undefined;
    },
    WAIT,
  );
  expect(ready.reason).toBe(ARTIFACT_STORE_REASONS.storeReachable);
  expect(Date.parse(ready.lastTransitionTime)).toBeGreaterThanOrEqual(Date.parse(notReady.lastTransitionTime));
});
