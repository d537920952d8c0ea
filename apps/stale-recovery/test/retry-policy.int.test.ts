import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, LABELS, NAMESPACE_AUTOMATIC_RETRY_ANNOTATION, RUN_PLURAL } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { currentPhase, transition } from '@kruntimes/run-state';
import type { RunEvent, WriterRole } from '@kruntimes/run-state';
import { STALE_RECOVERY_RULES, StaleRecovery } from '@kruntimes/stale-recovery-core';
import { Cluster, NamespaceAccess, waitFor } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';

/**
 * The organisation's retry policy (docs/operations.md "Retry policy"): a retrySafe task
 * whose owner was lost is retried automatically only when the cluster default
 * (stale-recovery's `automaticRetry`, flag --automatic-retry) and the namespace annotation
 * `kruntimes.io/automatic-retry` both allow it. The test plays the scheduler and runtimed
 * (the task bound to and claimed by a Runtime Pod that is never scheduled) and loses the
 * owner by deleting that Pod: the exact Pod UID gone is the fence's proof, and
 * stale-recovery (with its least-privilege rules) decides alone.
 */
const cluster = Cluster.fromEnvironment();
const admin = cluster.kubeConfig();
const objects = admin.makeApiClient(CustomObjectsApi);
const core = admin.makeApiClient(CoreV1Api);
const WAIT = { timeoutMs: 60_000, intervalMs: 100 };
const RUNTIME = 'sh';

let namespace: TestNamespace | undefined;
let recovery: StaleRecovery | undefined;
const errors: { object: object; message: string }[] = [];

afterEach(async () => {
  await recovery?.stop();
  await namespace?.delete();
  recovery = undefined;
  namespace = undefined;
});

async function getRun(ns: string, name: string): Promise<Run> {
  return (await objects.getNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: ns,
    plural: RUN_PLURAL,
    name,
  })) as Run;
}

async function act(ns: string, name: string, writer: WriterRole, event: RunEvent): Promise<void> {
  const run = await getRun(ns, name);
  const result = transition({ run, event, writer, now: new Date().toISOString() });
  if (!result.ok) throw result.error;
  await objects.replaceNamespacedCustomObjectStatus({
    group: API_GROUP,
    version: API_VERSION,
    namespace: ns,
    plural: RUN_PLURAL,
    name,
    body: { ...run, status: result.status },
  });
}

/** A retrySafe task Running on a Runtime Pod that the test then deletes: its owner is lost. */
async function loseOwnerOfRetrySafeTask(ns: string, name: string): Promise<void> {
  const pod = await core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name: `${name}-pod`, labels: { [LABELS.runtime]: RUNTIME } },
      spec: { containers: [{ name: 'runtimed', image: 'kruntimes/runtimed:dev' }] },
    },
  });
  await objects.createNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: ns,
    plural: RUN_PLURAL,
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'Run',
      metadata: { name },
      spec: {
        runtime: RUNTIME,
        source: { inline: 'echo once' },
        mode: { task: {} },
        retryPolicy: { retrySafe: true, maxAttempts: 3, initialBackoffSeconds: 1 },
      },
    },
  });
  await act(ns, name, 'scheduler', { type: 'Bind', pod: `${name}-pod`, podUID: pod.metadata?.uid ?? '' });
  await act(ns, name, 'runtimed', { type: 'Claim' });
  // Never scheduled: the API server removes it at once.
  await core.deleteNamespacedPod({ namespace: ns, name: `${name}-pod`, gracePeriodSeconds: 0 });
}

async function start(clusterAllows: boolean, annotation: string | undefined): Promise<string> {
  namespace = await cluster.createNamespace({ prefix: 'retry-policy', waitForDefaultServiceAccount: true });
  if (annotation !== undefined) {
    const live = await core.readNamespace({ name: namespace.name });
    const metadata = live.metadata ?? {};
    metadata.annotations = { ...metadata.annotations, [NAMESPACE_AUTOMATIC_RETRY_ANNOTATION]: annotation };
    live.metadata = metadata;
    await core.replaceNamespace({ name: namespace.name, body: live });
  }
  recovery = new StaleRecovery({
    kubeConfig: await new NamespaceAccess(cluster, namespace.name).serviceAccountKubeConfig('stale-recovery', STALE_RECOVERY_RULES),
    namespace: namespace.name,
    logger: { error: (object, message) => errors.push({ object, message }), debug: () => undefined, info: () => undefined },
    recheckMs: 1_000,
    automaticRetry: clusterAllows,
  });
  await recovery.start();
  return namespace.name;
}

test.each([
  [
    'the cluster forbids (--automatic-retry=false)',
    false,
    undefined,
    /^owner lost and not retried automatically: the cluster retry policy forbids automatic retries \(--automatic-retry=false, chart value global\.automaticRetry\); retry it with krt retry: attempt 1 on Pod lost-pod: the owner Pod no longer exists$/,
  ],
  ['the cluster forbids, the namespace cannot allow it ("true")', false, 'true', /the cluster retry policy forbids automatic retries/],
  [
    'the namespace forbids (annotation "false")',
    true,
    'false',
    /^owner lost and not retried automatically: the namespace retry policy forbids automatic retries \(annotation kruntimes\.io\/automatic-retry="false" on namespace retry-policy-[a-z0-9-]+\); retry it with krt retry: attempt 1/,
  ],
])(
  '%s: a retrySafe task whose owner was lost is not retried, Interrupted OwnerLost naming the policy',
  async (_label, clusterAllows, annotation, message) => {
    const ns = await start(clusterAllows, annotation);
    await loseOwnerOfRetrySafeTask(ns, 'lost');
    const ended = await waitFor(
      'lost Interrupted',
      async () => {
        const run = await getRun(ns, 'lost');
        return currentPhase(run) === 'Interrupted' ? run : undefined;
      },
      WAIT,
    );
    expect(ended.status).toMatchObject({ phase: 'Interrupted', reason: 'OwnerLost', attempt: 1 });
    expect(ended.status?.message).toMatch(message);
    expect(errors).toEqual([]);
  },
  120_000,
);

test.each([
  ['nothing set', true, undefined],
  ['the namespace annotation "true"', true, 'true'],
])(
  'the policy allows (%s): the retrySafe task is retried (Pending, attempt 2)',
  async (_label, clusterAllows, annotation) => {
    const ns = await start(clusterAllows, annotation);
    await loseOwnerOfRetrySafeTask(ns, 'lost');
    const requeued = await waitFor(
      'lost requeued',
      async () => {
        const run = await getRun(ns, 'lost');
        return (run.status?.attempt ?? 0) >= 2 ? run : undefined;
      },
      WAIT,
    );
    expect(requeued.status).toMatchObject({ phase: 'Pending', attempt: 2 });
    expect(errors).toEqual([]);
  },
  120_000,
);
