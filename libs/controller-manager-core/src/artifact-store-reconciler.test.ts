import { ApiException } from '@kubernetes/client-node';
import type { CoreV1Api, V1Secret } from '@kubernetes/client-node';
import { ARTIFACT_STORE_REASONS, ARTIFACT_STORE_SECRET_KEYS } from '@kruntimes/api';
import type { ArtifactStore, ArtifactStoreStatus, Run } from '@kruntimes/api';
import { asReconciler } from '@kruntimes/controller-runtime';
import { FakeCache, RecordingLogger } from '@kruntimes/controller-runtime/testing';
import { FakeObjectClient } from '@kruntimes/run-client/testing';
import { ArtifactStoreReconciler } from './artifact-store-reconciler.ts';

const KEY = 'ns/store';
const START = Date.parse('2026-06-01T12:00:00Z');
const INTERVAL_MS = 300_000;
/** The retry after an unavailable store: min(interval, 30 s). */
const RETRY_MS = 30_000;

function store(overrides: { generation?: number; status?: ArtifactStoreStatus; endpoint?: string } = {}): ArtifactStore {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'ArtifactStore',
    metadata: { name: 'store', namespace: 'ns', uid: 'store-uid', resourceVersion: '7', generation: overrides.generation ?? 1 },
    spec: { endpoint: overrides.endpoint ?? 'http://127.0.0.1:1', bucket: 'b', credentialsSecretRef: { name: 'creds' } },
    ...(overrides.status === undefined ? {} : { status: overrides.status }),
  };
}

/** A CoreV1Api that holds the given Secrets of namespace ns and answers 404 for any other. */
function secrets(held: Record<string, V1Secret['data']>): Pick<CoreV1Api, 'readNamespacedSecret'> {
  return {
    readNamespacedSecret: ({ namespace, name }) => {
      const data = namespace === 'ns' ? held[name] : undefined;
      if (data === undefined) return Promise.reject(new ApiException(404, 'not found', {}, {}));
      return Promise.resolve({ metadata: { name, namespace }, data });
    },
  };
}

const base64 = (text: string): string => Buffer.from(text).toString('base64');
const VALID_KEYS = {
  [ARTIFACT_STORE_SECRET_KEYS.accessKeyId]: base64('id'),
  [ARTIFACT_STORE_SECRET_KEYS.secretAccessKey]: base64('secret'),
};

function harness(live: ArtifactStore, held: Record<string, V1Secret['data']> = {}) {
  const clock = { now: START };
  const artifactStores = new FakeObjectClient<ArtifactStore>([live]);
  const reconciler = new ArtifactStoreReconciler({
    caches: { runs: new FakeCache<Run>() },
    core: secrets(held),
    artifactStores,
    logger: new RecordingLogger(),
    now: () => clock.now,
    cleanupIntervalMs: INTERVAL_MS,
    storeRequestTimeoutMs: 1_000,
  });
  const cache = new FakeCache<ArtifactStore>([live]);
  /** Reconciles what the cache holds, as the controller does. */
  const reconcile = () => asReconciler(cache, reconciler)(KEY, new AbortController().signal);
  return { clock, artifactStores, reconciler, cache, reconcile };
}

/** The Ready condition's status and reason of what the last accepted status write stored. */
function readyOf(client: FakeObjectClient<ArtifactStore>): { status: string; reason: string } | undefined {
  const condition = client.live('ns', 'store')?.status?.conditions?.find((c) => c.type === 'Ready');
  return condition === undefined ? undefined : { status: condition.status, reason: condition.reason };
}

test.each([
  ['the credentials Secret is missing', {}, ARTIFACT_STORE_REASONS.secretNotFound],
  ['the Secret lacks a key', { creds: { [ARTIFACT_STORE_SECRET_KEYS.accessKeyId]: base64('id') } }, ARTIFACT_STORE_REASONS.secretInvalid],
  ['the store does not answer', { creds: VALID_KEYS }, ARTIFACT_STORE_REASONS.storeUnreachable],
])('%s: Ready False with its reason is written, next pass after the retry', async (_name, held, reason) => {
  const { artifactStores, reconcile } = harness(store(), held);

  await expect(reconcile()).resolves.toEqual({ requeueAfterMs: RETRY_MS });

  expect(artifactStores.writes.map((write) => [write.verb, write.outcome])).toEqual([['replaceStatus', 'ok']]);
  expect(readyOf(artifactStores)).toEqual({ status: 'False', reason });
  expect(artifactStores.live('ns', 'store')?.status?.observedGeneration).toBe(1);
});

test('before the next pass is due, an event only requeues for what is left: no pass, no write', async () => {
  const { clock, artifactStores, reconcile } = harness(store());
  await reconcile();
  clock.now += 10_000;

  await expect(reconcile()).resolves.toEqual({ requeueAfterMs: RETRY_MS - 10_000 });

  expect(artifactStores.writes).toHaveLength(1);
});

test('a new generation passes at once, before the due time', async () => {
  const { clock, artifactStores, cache, reconcile } = harness(store());
  await reconcile();
  clock.now += 10_000;
  cache.set({ ...store({ generation: 2 }), status: artifactStores.live('ns', 'store')?.status ?? {} });

  await expect(reconcile()).resolves.toEqual({ requeueAfterMs: RETRY_MS });

  expect(artifactStores.writes).toHaveLength(2);
});

test('a pass whose status is the one already held writes nothing', async () => {
  const { clock, artifactStores, cache, reconcile } = harness(store());
  await reconcile();
  const written = artifactStores.live('ns', 'store');
  if (written === undefined) throw new Error('the status write was not kept');
  cache.set(written);
  clock.now += RETRY_MS;

  await expect(reconcile()).resolves.toEqual({ requeueAfterMs: RETRY_MS });

  expect(artifactStores.writes).toHaveLength(1);
});

test.each(['Conflict', 'NotFound'] as const)('a status write refused (%s) leaves the next pass due at once', async (refusal) => {
  const { artifactStores, reconcile } = harness(store());
  artifactStores.refuse('replaceStatus', KEY, refusal);

  await expect(reconcile()).resolves.toEqual({ requeueAfterMs: RETRY_MS });
  // The watch event of the newer version (or the delete) reconciles again: a full pass, not a wait.
  await expect(reconcile()).resolves.toEqual({ requeueAfterMs: RETRY_MS });

  expect(artifactStores.writes.map((write) => write.outcome)).toEqual([refusal, refusal]);
});

test.each([
  [
    'deleted from the cache',
    (cache: FakeCache<ArtifactStore>) => {
      cache.delete('store', 'ns');
    },
  ],
  [
    'being deleted',
    (cache: FakeCache<ArtifactStore>) => {
      cache.set({ ...store(), metadata: { ...store().metadata, deletionTimestamp: new Date(START).toISOString() } });
    },
  ],
])('a store %s is forgotten: nothing written, and once back it passes at once', async (_name, remove) => {
  const { clock, artifactStores, cache, reconcile } = harness(store());
  await reconcile();
  remove(cache);

  await expect(reconcile()).resolves.toBeUndefined();
  expect(artifactStores.writes).toHaveLength(1);

  cache.set(store());
  clock.now += 1_000;
  await expect(reconcile()).resolves.toEqual({ requeueAfterMs: RETRY_MS });
  expect(artifactStores.writes).toHaveLength(2);
});
