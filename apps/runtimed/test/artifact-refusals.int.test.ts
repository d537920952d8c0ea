import type { V1Pod } from '@kubernetes/client-node';
import type { Run } from '@kruntimes/api';
import { RuntimeEnvironment } from './runtime-pods.ts';

/**
 * Real runtimed and a real Runtime Server against the real control plane, no store
 * needed: an artifact failure is not retried even under a retry policy, and the grants
 * service listens on loopback only. (The store end to end: artifacts.int.test.ts.)
 */
let env: RuntimeEnvironment;
let pod: V1Pod;

beforeAll(async () => {
  env = await RuntimeEnvironment.start('runtimed-artdecl');
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

test("runtimed's ArtifactGrants listens on loopback only", async () => {
  const started = (await env.logs('bash-0', 'runtimed')).find((line) => line.msg === 'runtimed started');
  expect(started?.artifactGrants).toMatch(/^127\.0\.0\.1:[1-9][0-9]*$/);
});
