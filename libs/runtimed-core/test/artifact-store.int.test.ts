// runtimed's grants and its verification against the real API server and a real object
// store (SeaweedFS on loopback), with runtimed's own RBAC (RUNTIMED_ROLE_RULES): the
// presigned URL uploads to exactly the attempt's key, expires with the Pod Lease, and the
// store refuses another body; at exit 0 a missing object is ArtifactMissing, a wrong
// size or digest ArtifactInvalid, and a store that cannot be reached is retried and then
// reported as ArtifactStoreUnavailable.
import { createHash } from 'node:crypto';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_GROUP_VERSION, API_VERSION, ARTIFACT_STORE_PLURAL, RUN_PLURAL, artifactObjectKey } from '@kruntimes/api';
import type { ArtifactStoreSpec, Run, RunArtifacts } from '@kruntimes/api';
import { transition } from '@kruntimes/run-state';
import { Cluster, NamespaceAccess, ObjectStore, kubeConfigFor } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { pino } from 'pino';
import { ArtifactGrants } from '../src/artifact-grants.ts';
import type { StoreResolver } from '../src/artifact-store.ts';
import { kubernetesStoreResolver } from '../src/artifact-store-access.ts';
import { ArtifactVerification } from '../src/artifact-verification.ts';
import type { ArtifactAttempt } from '../src/artifact-verification.ts';
import type { Epoch } from '../src/epoch.ts';
import { RUNTIMED_ROLE_RULES } from '../src/rbac.ts';
import { RunClient } from '../src/run-client.ts';

const cluster = Cluster.fromEnvironment();
const admin = cluster.kubeConfig();
const objects = admin.makeApiClient(CustomObjectsApi);
const core = admin.makeApiClient(CoreV1Api);
const POD_UID = '00000000-0000-4000-8000-0000000000b7';
const BUCKET = 'kruntimes';
const PREFIX = 'artifacts';
const logger = pino({ level: 'silent' });
const ARTIFACTS: RunArtifacts = {
  store: 'results',
  outputs: [
    { id: 'report.csv', maxBytes: 1024, mediaType: 'text/csv' },
    { id: 'plot.png', maxBytes: 64, mediaType: 'image/png', optional: true },
  ],
};

let namespace: TestNamespace;
let store: ObjectStore;
let stores: StoreResolver;
let runs: RunClient;
let leaseExpiresAtMs: number;
let grants: ArtifactGrants;

beforeAll(async () => {
  store = await ObjectStore.start();
  await store.createBucket(BUCKET);
  namespace = await cluster.createNamespace({ prefix: 'artifact-store' });
  await core.createNamespacedSecret({
    namespace: namespace.name,
    body: { metadata: { name: 'store-keys' }, stringData: { ...store.credentials } },
  });
  await createStore('results', { endpoint: store.endpoint, bucket: BUCKET, prefix: PREFIX, credentialsSecretRef: { name: 'store-keys' } });
  // Nothing listens on port 9 of loopback: a store that cannot be reached.
  await createStore('unreachable', { endpoint: 'http://127.0.0.1:9', bucket: BUCKET, credentialsSecretRef: { name: 'store-keys' } });
  // runtimed's own identity: what RUNTIMED_ROLE_RULES grant is what these reads need.
  const token = await new NamespaceAccess(cluster, namespace.name).serviceAccountToken('runtimed', RUNTIMED_ROLE_RULES);
  const runtimed = kubeConfigFor({ server: cluster.info.server, caPem: cluster.info.caPem, user: 'runtimed', token });
  stores = kubernetesStoreResolver(runtimed);
  runs = new RunClient(runtimed);
  grants = new ArtifactGrants({ runs, stores, leaseExpiresAtMs: () => leaseExpiresAtMs, runtime: 'python', capabilities: [], logger });
});
afterAll(async () => {
  await namespace.delete();
  await store.stop();
});
beforeEach(() => {
  leaseExpiresAtMs = Date.now() + 90_000;
});

async function createStore(name: string, spec: ArtifactStoreSpec): Promise<void> {
  await objects.createNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: namespace.name,
    plural: ARTIFACT_STORE_PLURAL,
    body: { apiVersion: API_GROUP_VERSION, kind: 'ArtifactStore', metadata: { name }, spec },
  });
}

/** A task Run with spec.artifacts, bound to POD_UID and claimed: its attempt 1 is running on "this" Pod. */
async function runningTask(name: string): Promise<Epoch> {
  const target = { group: API_GROUP, version: API_VERSION, namespace: namespace.name, plural: RUN_PLURAL };
  const created = (await objects.createNamespacedCustomObject({
    ...target,
    body: {
      apiVersion: API_GROUP_VERSION,
      kind: 'Run',
      metadata: { name },
      spec: { runtime: 'python', source: { inline: 'print(1)' }, mode: { task: {} }, artifacts: ARTIFACTS },
    },
  })) as Run;
  const bound = transition({
    run: created,
    event: { type: 'Bind', pod: 'pod-a', podUID: POD_UID },
    writer: 'scheduler',
    now: new Date().toISOString(),
  });
  if (!bound.ok) throw bound.error;
  await objects.replaceNamespacedCustomObjectStatus({ ...target, name, body: { ...created, status: bound.status } });
  const epoch: Epoch = { namespace: namespace.name, name, uid: created.metadata.uid ?? '', attempt: 1, podUID: POD_UID };
  await runs.transition(epoch, { type: 'Claim' });
  return epoch;
}

const sha256 = (body: string) => createHash('sha256').update(body).digest('hex');
const key = (epoch: Epoch, id: string, attempt = epoch.attempt) => artifactObjectKey(PREFIX, epoch.namespace, epoch.uid, attempt, id);
const attemptOf = (epoch: Epoch, storeName = 'results'): ArtifactAttempt => ({
  namespace: epoch.namespace,
  uid: epoch.uid,
  attempt: epoch.attempt,
  store: storeName,
  outputs: ARTIFACTS.outputs,
});

/** GrantUpload for one body, then the PUT exactly as a grant says. */
async function upload(token: string, id: string, body: string, mediaType: string, sent = body): Promise<Response> {
  const grant = await grants.grantUpload({
    grantToken: token,
    artifactId: id,
    size: Buffer.byteLength(body),
    sha256: sha256(body),
    mediaType,
  });
  return fetch(grant.url, { method: grant.method, headers: grant.headers, body: sent });
}

test('a grant uploads exactly the attempt’s key, expires no later than the Pod Lease, and the store refuses another body', async () => {
  const epoch = await runningTask('granted');
  const { token } = grants.register(epoch, ARTIFACTS);
  leaseExpiresAtMs = Date.now() + 42_000;
  const body = 'a,b\n1,2\n';
  const grant = await grants.grantUpload({
    grantToken: token,
    artifactId: 'report.csv',
    size: body.length,
    sha256: sha256(body),
    mediaType: '',
  });
  expect(grant.method).toBe('PUT');
  expect(grant.headers).toMatchObject({ 'content-type': 'text/csv', 'content-length': String(body.length) });
  expect(grant.expiresAt!.getTime()).toBeLessThanOrEqual(leaseExpiresAtMs);
  expect(new URL(grant.url).searchParams.get('X-Amz-Expires')).toBe('41');
  expect(new URL(grant.url).pathname).toBe(`/${BUCKET}/${key(epoch, 'report.csv')}`);
  // The store (its signature and checksum checks) refuses a body other than the granted one, same size.
  const other = await fetch(grant.url, { method: 'PUT', headers: grant.headers, body: 'x'.repeat(body.length) });
  expect(other.ok).toBe(false);
  const put = await fetch(grant.url, { method: 'PUT', headers: grant.headers, body });
  expect(put.status).toBe(200);
  expect(await store.listKeys(BUCKET, `${PREFIX}/${namespace.name}/`)).toEqual([key(epoch, 'report.csv')]);
  grants.unregister(token);
});

test('verification: all good gives the records; missing is ArtifactMissing; wrong size or digest ArtifactInvalid', async () => {
  const epoch = await runningTask('verified');
  const { token } = grants.register(epoch, ARTIFACTS);
  const report = 'id,total\n1,3\n';
  expect((await upload(token, 'report.csv', report, 'text/csv')).status).toBe(200);
  grants.unregister(token);
  const verification = new ArtifactVerification({ stores, retryDelaysMs: [] });
  const entry = { artifactId: 'report.csv', sha256: sha256(report), size: report.length, mediaType: 'text/csv' };

  expect(await verification.verify(attemptOf(epoch), [entry], logger)).toEqual({
    type: 'verified',
    records: [{ id: 'report.csv', digest: `sha256:${sha256(report)}`, size: report.length, mediaType: 'text/csv' }],
  });
  expect(
    await verification.verify(attemptOf(epoch), [entry, { artifactId: 'plot.png', sha256: sha256('png'), size: 3, mediaType: '' }], logger),
  ).toEqual({ type: 'failed', reason: 'ArtifactMissing', message: 'plot.png is in the manifest but not in the store' });
  expect(await verification.verify(attemptOf(epoch), [{ ...entry, size: report.length + 1 }], logger)).toEqual({
    type: 'failed',
    reason: 'ArtifactInvalid',
    message: `report.csv: the manifest says ${report.length + 1} bytes, the store holds ${report.length}`,
  });
  const forged = sha256('something else');
  expect(await verification.verify(attemptOf(epoch), [{ ...entry, sha256: forged }], logger)).toEqual({
    type: 'failed',
    reason: 'ArtifactInvalid',
    message: `report.csv: the manifest says sha256 ${forged} (${report.length} bytes), the stored object has ${sha256(report)} (${report.length} bytes)`,
  });
});

test('after success, the objects of other attempts and the unnamed ones of this attempt are removed', async () => {
  const epoch = await runningTask('cleaned');
  const { token } = grants.register(epoch, ARTIFACTS);
  expect((await upload(token, 'report.csv', 'kept\n', 'text/csv')).status).toBe(200);
  expect((await upload(token, 'plot.png', 'unnamed', 'image/png')).status).toBe(200);
  grants.unregister(token);
  // What an earlier attempt left (as its grant would have put it).
  await store.putObject(BUCKET, key(epoch, 'report.csv', 7), 'old\n', 'text/csv');
  const verification = new ArtifactVerification({ stores });
  const record = { id: 'report.csv', digest: `sha256:${sha256('kept\n')}`, size: 5, mediaType: 'text/csv' };
  await verification.removeOthers(attemptOf(epoch), [record], logger);
  expect(await store.listKeys(BUCKET, `${PREFIX}/${namespace.name}/${epoch.uid}/`)).toEqual([key(epoch, 'report.csv')]);
});

test('a store that cannot be reached is tried again, then reported as ArtifactStoreUnavailable', async () => {
  const epoch = await runningTask('unreachable');
  const verification = new ArtifactVerification({ stores, retryDelaysMs: [100, 100] });
  const entry = { artifactId: 'report.csv', sha256: sha256('x'), size: 1, mediaType: 'text/csv' };
  const started = Date.now();
  await expect(verification.verify(attemptOf(epoch, 'unreachable'), [entry], logger)).rejects.toMatchObject({
    code: 'ArtifactStoreUnavailable',
    message: expect.stringContaining('could not verify the artifacts in store unreachable after 3 tries') as string,
  });
  expect(Date.now() - started).toBeGreaterThanOrEqual(200);
});
