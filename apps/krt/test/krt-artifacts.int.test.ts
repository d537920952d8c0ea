// `krt artifacts` as a user runs it: the real CLI, a user's kubeconfig with get on the Run, its
// ArtifactStore and the store's Secret, against the real control plane and the real object store.
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, ARTIFACT_STORE_PLURAL, artifactObjectKey, RUN_PLURAL } from '@kruntimes/api';
import type { ArtifactRecord, ArtifactStore, Run } from '@kruntimes/api';
import { transition } from '@kruntimes/run-state';
import type { RunEvent, WriterRole } from '@kruntimes/run-state';
import { Cluster, NamespaceAccess, ObjectStore, kubeconfigYaml } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { runKrt } from './run-krt.ts';
import type { CliResult } from './run-krt.ts';

const BUCKET = 'krt-artifacts';
const PREFIX = 'runs';
const CLI_TIMEOUT_MS = 60_000;
const cluster = Cluster.fromEnvironment();
const admin = cluster.kubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const objects = admin.makeApiClient(CustomObjectsApi);

let store: ObjectStore;
let namespace: TestNamespace;
let dir: string;
let kubeconfig: string;

const REPORT = Buffer.from('region,total\nnorth,12\nsouth,30\n');
const MODEL = Buffer.from(Array.from({ length: 300 }, (_, index) => index % 256));

beforeAll(async () => {
  store = await ObjectStore.start();
  await store.createBucket(BUCKET);
});
afterAll(async () => {
  await store.stop();
});

beforeEach(async () => {
  namespace = await cluster.createNamespace({ prefix: 'krt-artifacts' });
  dir = await mkdtemp(join(tmpdir(), 'krt-artifacts-'));
  kubeconfig = join(dir, 'alice.kubeconfig');
  const yaml = kubeconfigYaml({
    server: cluster.info.server,
    caPem: cluster.info.caPem,
    user: 'alice',
    token: cluster.user('alice').token,
  });
  await writeFile(kubeconfig, yaml, { mode: 0o600 });
  // What a user needs for `krt artifacts --get`: the Run, its ArtifactStore and the store's Secret.
  await new NamespaceAccess(cluster, namespace.name).grantUser('alice', 'artifact-reader', [
    { apiGroups: [API_GROUP], resources: [RUN_PLURAL, ARTIFACT_STORE_PLURAL], verbs: ['get', 'list'] },
    { apiGroups: [''], resources: ['secrets'], verbs: ['get'], resourceNames: ['store-credentials'] },
  ]);
  await core.createNamespacedSecret({
    namespace: namespace.name,
    body: {
      metadata: { name: 'store-credentials' },
      stringData: { accessKeyId: store.credentials.accessKeyId, secretAccessKey: store.credentials.secretAccessKey },
    },
  });
  const artifactStore: ArtifactStore = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'ArtifactStore',
    metadata: { name: 'main' },
    spec: { endpoint: store.endpoint, bucket: BUCKET, prefix: PREFIX, credentialsSecretRef: { name: 'store-credentials' } },
  };
  await objects.createNamespacedCustomObject({ ...custom(ARTIFACT_STORE_PLURAL), body: artifactStore });
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
  await namespace.delete();
});

const custom = (plural: string) => ({ group: API_GROUP, version: API_VERSION, namespace: namespace.name, plural });

async function krt(args: string[]): Promise<CliResult> {
  return runKrt(args, { kubeconfig, namespace: namespace.name, timeoutMs: CLI_TIMEOUT_MS });
}

function record(id: string, body: Buffer, mediaType: string): ArtifactRecord {
  return { id, size: body.length, mediaType, digest: `sha256:${createHash('sha256').update(body).digest('hex')}` };
}

/** A Run that succeeded with two artifacts, uploaded (by the test, as runtimed would have verified them) to its attempt's keys. */
async function succeededRun(name: string): Promise<Run> {
  const body: Run = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name },
    spec: {
      runtime: 'none',
      source: { inline: 'echo hi' },
      mode: { task: {} },
      artifacts: {
        store: 'main',
        outputs: [
          { id: 'report.csv', maxBytes: 1024, mediaType: 'text/csv' },
          { id: 'model.bin', maxBytes: 1024, mediaType: 'application/octet-stream' },
        ],
      },
    },
  };
  await objects.createNamespacedCustomObject({ ...custom(RUN_PLURAL), body });
  const artifacts = [record('report.csv', REPORT, 'text/csv'), record('model.bin', MODEL, 'application/octet-stream')];
  const steps: [WriterRole, RunEvent][] = [
    ['scheduler', { type: 'Bind', pod: 'p', podUID: '00000000-0000-4000-8000-000000000001' }],
    ['runtimed', { type: 'Claim' }],
    ['runtimed', { type: 'Succeeded', artifacts }],
  ];
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
  await store.putObject(BUCKET, keyOf(run, 'report.csv'), REPORT, 'text/csv');
  await store.putObject(BUCKET, keyOf(run, 'model.bin'), MODEL);
  return run;
}

function keyOf(run: Run, id: string): string {
  return artifactObjectKey(PREFIX, namespace.name, run.metadata.uid ?? '', run.status?.attempt ?? 0, id);
}

test('lists status.artifacts as a table and as JSON', async () => {
  await succeededRun('done');
  const table = await krt(['artifacts', 'done']);
  expect([table.code, table.stderr]).toEqual([0, '']);
  const lines = table.stdout.trimEnd().split('\n');
  expect(lines[0]).toMatch(/^ID\s+SIZE\s+MEDIA TYPE\s+DIGEST$/);
  expect(lines.slice(1).map((line) => line.split(/\s+/))).toEqual([
    ['report.csv', String(REPORT.length), 'text/csv', record('report.csv', REPORT, 'text/csv').digest],
    ['model.bin', String(MODEL.length), 'application/octet-stream', record('model.bin', MODEL, 'application/octet-stream').digest],
  ]);
  const json = await krt(['artifacts', 'done', '-o', 'json']);
  expect(json.code).toBe(0);
  expect(JSON.parse(json.stdout)).toEqual([
    record('report.csv', REPORT, 'text/csv'),
    record('model.bin', MODEL, 'application/octet-stream'),
  ]);
});

test('--get downloads the succeeded attempt’s object, verified, to a file and to stdout', async () => {
  await succeededRun('done');
  const file = join(dir, 'report.csv');
  const got = await krt(['artifacts', 'done', '--get', 'report.csv', '-o', file]);
  expect([got.code, got.stdout]).toEqual([0, '']);
  expect(got.stderr).toMatch(/report\.csv: \d+ bytes, sha256:[0-9a-f]{64} verified/);
  expect(await readFile(file)).toEqual(REPORT);

  const binary = await krt(['artifacts', 'done', '--get', 'model.bin', '-o', join(dir, 'model.bin')]);
  expect(binary.code).toBe(0);
  expect(await readFile(join(dir, 'model.bin'))).toEqual(MODEL);

  const stdout = await krt(['artifacts', 'done', '--get', 'report.csv', '-o', '-']);
  expect([stdout.code, stdout.stdout]).toEqual([0, REPORT.toString('utf8')]);
  expect((await readdir(dir)).sort()).toEqual(['alice.kubeconfig', 'model.bin', 'report.csv']);
});

test('a tampered object (overwritten in the store with the admin credentials) is refused: exit 5, a clear error, no file left', async () => {
  const run = await succeededRun('done');
  const file = join(dir, 'report.csv');
  // Same size, other bytes: only the digest tells.
  const sameSize = Buffer.from(REPORT);
  sameSize[0] = 'R'.charCodeAt(0);
  await store.putObject(BUCKET, keyOf(run, 'report.csv'), sameSize, 'text/csv');
  const digest = await krt(['artifacts', 'done', '--get', 'report.csv', '-o', file]);
  expect(digest.code).toBe(5);
  expect(digest.stderr).toMatch(/artifact "report\.csv" does not match its record: .* with sha256:[0-9a-f]{64}, status\.artifacts says/);
  // Longer: refused once the body passes the recorded size, and nothing reaches stdout.
  await store.putObject(BUCKET, keyOf(run, 'report.csv'), Buffer.concat([REPORT, Buffer.from('east,99\n')]), 'text/csv');
  const longer = await krt(['artifacts', 'done', '--get', 'report.csv', '-o', '-']);
  expect([longer.code, longer.stdout]).toEqual([5, '']);
  expect(longer.stderr).toMatch(/the store has more than \d+ bytes/);
  const toFile = await krt(['artifacts', 'done', '--get', 'report.csv', '-o', file]);
  expect(toFile.code).toBe(5);
  expect((await readdir(dir)).sort()).toEqual(['alice.kubeconfig']);
});

test('an unknown artifact ID is exit 3 naming the Run’s artifacts; a Run without artifacts says why', async () => {
  await succeededRun('done');
  const unknown = await krt(['artifacts', 'done', '--get', 'missing.csv', '-o', join(dir, 'x')]);
  expect(unknown.code).toBe(3);
  expect(unknown.stderr).toBe('error: Run done has no artifact "missing.csv" (its artifacts: report.csv, model.bin)\n');
  await objects.createNamespacedCustomObject({
    ...custom(RUN_PLURAL),
    body: {
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata: { name: 'plain' },
      spec: { runtime: 'none', source: { inline: 'x' }, mode: { task: {} } },
    },
  });
  const none = await krt(['artifacts', 'plain']);
  expect([none.code, none.stdout, none.stderr]).toEqual([0, '', 'Run plain has no artifacts (it declares none).\n']);
  expect((await readdir(dir)).sort()).toEqual(['alice.kubeconfig']);
});
