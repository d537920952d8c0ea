import type { V1Pod } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, ARTIFACT_STORE_PLURAL } from '@kruntimes/api';
import type { ArtifactStore, Run } from '@kruntimes/api';
import { RuntimeEnvironment } from './runtime-pods.ts';

/**
 * Real runtimed and a real Runtime Server against the real control plane, no store
 * reachable: an artifact failure is not retried even under a retry policy, a store that
 * cannot be reached at exit 0 makes the attempt interrupted, and the grants service
 * listens on loopback only. (The store end to end: artifacts.int.test.ts.)
 */
let env: RuntimeEnvironment;
let pod: V1Pod;

beforeAll(async () => {
  env = await RuntimeEnvironment.start('runtimed-artdecl');
  await env.core.createNamespacedSecret({
    namespace: env.name,
    body: { metadata: { name: 'keys' }, stringData: { accessKeyId: 'id', secretAccessKey: 'not-used' } },
  });
  // Nothing listens on port 9 of loopback.
  const unreachable: ArtifactStore = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'ArtifactStore',
    metadata: { name: 'unreachable' },
    spec: { endpoint: 'http://127.0.0.1:9', bucket: 'none', credentialsSecretRef: { name: 'keys' } },
  };
  await env.objects.createNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: env.name,
    plural: ARTIFACT_STORE_PLURAL,
    body: unreachable,
  });
  pod = await env.createRuntimePod('bash-0', 'bash');
});

afterAll(async () => {
  await env.stop();
});

const phase = (run: Run) => run.status?.phase;

test('exit 0 without a declared artifact is not Succeeded: Failed ArtifactMissing, not retried (the same code gives the same result)', async () => {
  await env.createRun('no-report', {
    runtime: 'rt',
    source: { inline: 'echo "forgot the report"\n' },
    mode: { task: {} },
    retryPolicy: { maxAttempts: 3, initialBackoffSeconds: 1, maxBackoffSeconds: 1, retrySafe: true },
    artifacts: { store: 'results', outputs: [{ id: 'report.csv', maxBytes: 1024, mediaType: 'text/csv' }] },
  });
  await env.bind('no-report', pod);
  const failed = await env.waitForRun('no-report', 'Failed', (r) => phase(r) === 'Failed');
  expect(failed.status).toMatchObject({ phase: 'Failed', reason: 'ArtifactMissing', exitCode: 0, attempt: 1 });
  expect(failed.status?.message).toContain('report.csv is declared (required) but not in the manifest');
  expect(failed.status?.artifacts).toBeUndefined();
});

test('exit 0 while the store cannot be reached: retried over about 20 s, then the attempt is interrupted (not retrySafe: not run again)', async () => {
  const sha = 'e'.repeat(64);
  await env.createRun('store-down', {
    runtime: 'rt',
    // Records an entry without uploading: runtimed must look in the store, which does not answer.
    source: { inline: `krt-artifact record report.csv 5 ${sha}\n` },
    mode: { task: {} },
    artifacts: { store: 'unreachable', outputs: [{ id: 'report.csv', maxBytes: 1024, mediaType: 'text/csv' }] },
  });
  await env.bind('store-down', pod);
  const ended = await env.waitForRun('store-down', 'Interrupted', (r) => phase(r) === 'Interrupted', 90_000);
  expect(ended.status).toMatchObject({ phase: 'Interrupted', attempt: 1 });
  expect(ended.status?.message).toContain('exited 0, but its artifacts could not be verified');
  expect(ended.status?.message).toContain('after 4 tries');
  expect(ended.status?.artifacts).toBeUndefined();
}, 120_000);

test("runtimed's ArtifactGrants listens on loopback only", async () => {
  const started = (await env.logs('bash-0', 'runtimed')).find((line) => line.msg === 'runtimed started');
  expect(started?.artifactGrants).toMatch(/^127\.0\.0\.1:[1-9][0-9]*$/);
});
