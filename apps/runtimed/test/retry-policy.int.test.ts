import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { NAMESPACE_AUTOMATIC_RETRY_ANNOTATION } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { survivingProcesses, waitFor } from '@kruntimes/testing';
import { RuntimeEnvironment } from './runtime-pods.ts';

/**
 * The organisation's retry policy (docs/operations.md "Retry policy") where runtimed itself
 * would run a task again: its execution was cut short on a live Pod (runtimed SIGKILLed and
 * restarted in its Pod, as a kubelet does). A retrySafe task is then retried (the
 * task-lifecycle test shows it) unless the cluster default (KRT_AUTOMATIC_RETRY=false on
 * runtimed, set by the controller-manager from global.automaticRetry) or the namespace's
 * annotation forbids it: then it ends Interrupted, OwnerLost, naming the switch. runtimed
 * reads its Namespace through a Role, as the chart's RoleBinding grants it.
 */
let env: RuntimeEnvironment;
let scratch: string;

beforeAll(async () => {
  env = await RuntimeEnvironment.start('runtimed-retry-policy');
  scratch = await mkdtemp(join(tmpdir(), 'runtimed-retry-policy-'));
});

afterAll(async () => {
  await env.stop();
  await rm(scratch, { recursive: true, force: true });
});

const phase = (run: Run) => run.status?.phase;

/** A retrySafe task on `pod` that runs until stopped; resolves with its PIDs once running. */
function startRetrySafeTask(name: string, pod: V1Pod): Promise<number[]> {
  return env.startLongTask(name, pod, scratch, { maxAttempts: 3, initialBackoffSeconds: 1, maxBackoffSeconds: 1, retrySafe: true });
}

async function annotateNamespace(value: string): Promise<void> {
  const live = await env.core.readNamespace({ name: env.name });
  const metadata = live.metadata ?? {};
  metadata.annotations = { ...metadata.annotations, [NAMESPACE_AUTOMATIC_RETRY_ANNOTATION]: value };
  live.metadata = metadata;
  await env.core.replaceNamespace({ name: env.name, body: live });
}

test('the cluster default forbids it (KRT_AUTOMATIC_RETRY=false): runtimed restarted under a retrySafe task ends it Interrupted', async () => {
  const pod = await env.createRuntimePod('forbidding-0', 'bash', 'rt', { KRT_AUTOMATIC_RETRY: 'false' });
  const pids = await startRetrySafeTask('cluster-forbids', pod);
  env.node.crashContainer(env.name, 'forbidding-0', 'runtimed', 'SIGKILL');

  const ended = await env.waitForRun('cluster-forbids', 'Interrupted', (r) => phase(r) === 'Interrupted');
  expect(ended.status).toMatchObject({ attempt: 1, reason: 'OwnerLost' });
  expect(ended.status?.message).toContain('not retried: the cluster retry policy forbids automatic retries (--automatic-retry=false');
  expect(ended.status?.message).toContain('runtimed restarted during the execution');
  expect(await survivingProcesses(pids, 30_000, 100)).toEqual([]);
});

test('the namespace annotation forbids it where the cluster allows it: Interrupted, naming the annotation', async () => {
  await annotateNamespace('false');
  const pod = await env.createRuntimePod('allowing-0', 'bash');
  const pids = await startRetrySafeTask('namespace-forbids', pod);
  env.node.crashContainer(env.name, 'allowing-0', 'runtimed', 'SIGKILL');

  const ended = await env.waitForRun('namespace-forbids', 'Interrupted', (r) => phase(r) === 'Interrupted');
  expect(ended.status).toMatchObject({ attempt: 1, reason: 'OwnerLost' });
  expect(ended.status?.message).toContain(
    `not retried: the namespace retry policy forbids automatic retries (annotation ${NAMESPACE_AUTOMATIC_RETRY_ANNOTATION}="false" on namespace ${env.name})`,
  );
  expect(await survivingProcesses(pids, 30_000, 100)).toEqual([]);
});

test('the annotation lifted: the same Pod retries the next interrupted retrySafe task (the policy is read when it is needed)', async () => {
  await annotateNamespace('true');
  // Its runtimed is back (the kubelet restarted it) before the next Run is bound to it.
  const pod = await waitFor(
    'allowing-0 Ready again',
    async () => {
      const live = await env.core.readNamespacedPod({ namespace: env.name, name: 'allowing-0' });
      return live.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true ? live : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  const pids = await startRetrySafeTask('allowed', pod);
  env.node.crashContainer(env.name, 'allowing-0', 'runtimed', 'SIGKILL');

  const requeued = await env.waitForRun('allowed', 'requeued for attempt 2', (r) => phase(r) === 'Pending' && r.status?.attempt === 2);
  expect(requeued.status?.message).toContain('runtimed restarted during the execution');
  expect(await survivingProcesses(pids, 30_000, 100)).toEqual([]);
});
