import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, CONDITION_TYPES, LABELS, RUN_PLURAL } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { findCondition, transition } from '@kruntimes/run-state';
import type { RunEvent, WriterRole } from '@kruntimes/run-state';
import { PodLease } from '@kruntimes/runtimed-core';
import { STALE_RECOVERY_RULES, StaleRecovery } from '@kruntimes/stale-recovery-core';
import { Cluster, NamespaceAccess, waitFor } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';

/**
 * The Pod's clock does not matter: stale-recovery judges a Pod Lease's expiry by when it
 * saw the Lease change, on its own monotonic clock, never by the renewTime the Pod wrote.
 * Each test is one Runtime Pod whose clock is 5 minutes ahead or behind: runtimed's own
 * PodLease renews its Lease (renewTime on that clock) while the test plays the rest of the
 * owner (a task Run bound to and claimed by that Pod UID). The Pod object is never
 * scheduled, so nothing else touches it. While the Lease keeps changing the Run is never
 * marked Recovering; once the renewals stop it is, after about a lease duration.
 */
const cluster = Cluster.fromEnvironment();
const admin = cluster.kubeConfig();
const objects = admin.makeApiClient(CustomObjectsApi);
const core = admin.makeApiClient(CoreV1Api);
const leases = admin.makeApiClient(CoordinationV1Api);
const LEASE_SECONDS = 4;
const SKEW_MS = 5 * 60_000;
/** Renewals keep coming this long: three lease durations, each far shorter than the skew. */
const RENEWING_MS = 3 * LEASE_SECONDS * 1000;
const WAIT = { timeoutMs: 60_000, intervalMs: 100 };
const RUNTIME = 'skewed';

let namespace: TestNamespace;
let recovery: StaleRecovery;
const errors: { object: object; message: string }[] = [];

beforeAll(async () => {
  namespace = await cluster.createNamespace({ prefix: 'stale-recovery-skew', waitForDefaultServiceAccount: true });
  recovery = new StaleRecovery({
    kubeConfig: await new NamespaceAccess(cluster, namespace.name).serviceAccountKubeConfig('stale-recovery', STALE_RECOVERY_RULES),
    namespace: namespace.name,
    logger: { error: (object, message) => errors.push({ object, message }), debug: () => undefined, info: () => undefined },
    recheckMs: 1_000,
  });
  await recovery.start();
});

afterAll(async () => {
  await recovery.stop();
  await namespace.delete();
});

async function getRun(name: string): Promise<Run> {
  return (await objects.getNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: namespace.name,
    plural: RUN_PLURAL,
    name,
  })) as Run;
}

async function act(name: string, writer: WriterRole, event: RunEvent): Promise<void> {
  const run = await getRun(name);
  const result = transition({ run, event, writer, now: new Date().toISOString() });
  if (!result.ok) throw result.error;
  await objects.replaceNamespacedCustomObjectStatus({
    group: API_GROUP,
    version: API_VERSION,
    namespace: namespace.name,
    plural: RUN_PLURAL,
    name,
    body: { ...run, status: result.status },
  });
}

const recovering = (run: Run): boolean => findCondition(run.status?.conditions, CONDITION_TYPES.ready)?.reason === 'Recovering';

/** A Runtime Pod that is never scheduled (no node runs it, and no controller removes it). */
async function runtimePod(name: string): Promise<string> {
  const pod = await core.createNamespacedPod({
    namespace: namespace.name,
    body: {
      metadata: { name, labels: { [LABELS.runtime]: RUNTIME } },
      spec: { containers: [{ name: 'runtimed', image: 'kruntimes/runtimed:dev' }] },
    },
  });
  return pod.metadata?.uid ?? '';
}

/** A task Run bound to and claimed by the Pod, as the scheduler and runtimed would have. */
async function claimedTask(name: string, pod: { name: string; uid: string }): Promise<string> {
  const created = (await objects.createNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: namespace.name,
    plural: RUN_PLURAL,
    body: {
      apiVersion: `${API_GROUP}/${API_VERSION}`,
      kind: 'Run',
      metadata: { name },
      spec: { runtime: RUNTIME, source: { inline: 'sleep 300' }, mode: { task: {} } },
    },
  })) as Run;
  await act(name, 'scheduler', { type: 'Bind', pod: pod.name, podUID: pod.uid });
  await act(name, 'runtimed', { type: 'Claim' });
  return created.metadata.uid ?? '';
}

async function renewTimeMs(name: string): Promise<number> {
  const lease = await leases.readNamespacedLease({ namespace: namespace.name, name });
  return new Date(lease.spec?.renewTime ?? 0).getTime();
}

test.each([
  ['5 minutes ahead', SKEW_MS],
  ['5 minutes behind', -SKEW_MS],
])(
  'a Pod clock %s: never marked Recovering while its Lease is renewed; marked about a lease duration after the renewals stop',
  async (label, skewMs) => {
    const podName = `pod-${skewMs > 0 ? 'ahead' : 'behind'}`;
    const runName = `task-${skewMs > 0 ? 'ahead' : 'behind'}`;
    const podUID = await runtimePod(podName);
    const runUID = await claimedTask(runName, { name: podName, uid: podUID });
    const lease = new PodLease({
      kubeConfig: admin,
      pod: { name: podName, namespace: namespace.name, uid: podUID, ip: '10.0.0.1' },
      runtime: RUNTIME,
      durationSeconds: LEASE_SECONDS,
      renewSeconds: 1,
      logger: { error: (object, message) => errors.push({ object, message }), debug: () => undefined },
      runs: () => ({ held: [{ uid: runUID, attempt: 1 }], released: [] }),
      now: () => Date.now() + skewMs,
    });
    let stopped = false;
    try {
      await lease.start();
      // The Lease really carries the skewed clock.
      expect(Math.abs((await renewTimeMs(podName)) - (Date.now() + skewMs))).toBeLessThan(10_000);

      // Renewed for three lease durations: never suspect, whichever way the Pod's clock is off.
      const until = performance.now() + RENEWING_MS;
      while (performance.now() < until) {
        const run = await getRun(runName);
        expect({ label, recovering: recovering(run), phase: run.status?.phase }).toEqual({ label, recovering: false, phase: 'Running' });
        await sleep(200);
      }

      // The Pod stops renewing (its runtimed froze or died): marked after about a lease duration.
      await lease.stop();
      stopped = true;
      const stoppedAt = performance.now();
      await waitFor(`${runName} Recovering`, async () => (recovering(await getRun(runName)) ? true : undefined), WAIT);
      const afterMs = performance.now() - stoppedAt;
      // The last renewal was at most one renew period before the stop; the mark follows the expiry within rechecks.
      expect(afterMs).toBeGreaterThanOrEqual((LEASE_SECONDS - 1.5) * 1000);
      expect(afterMs).toBeLessThan((LEASE_SECONDS + 10) * 1000);
      expect((await getRun(runName)).status).toMatchObject({ phase: 'Running', attempt: 1, assignedPodUID: podUID, reason: 'Recovering' });
      expect(recovery.metrics.recoveries('leaseExpired', 'markedRecovering')).toBeGreaterThanOrEqual(1);
    } finally {
      if (!stopped) await lease.stop();
    }
    expect(errors).toEqual([]);
  },
  120_000,
);

test('a newly started stale-recovery calls no Lease expired before a full lease duration, however old its renewTime', async () => {
  const podName = 'pod-silent';
  const runName = 'task-silent';
  const podUID = await runtimePod(podName);
  const runUID = await claimedTask(runName, { name: podName, uid: podUID });
  // One renewal, a day in the past by the Pod's clock, then silence.
  const lease = new PodLease({
    kubeConfig: admin,
    pod: { name: podName, namespace: namespace.name, uid: podUID, ip: '10.0.0.2' },
    runtime: RUNTIME,
    durationSeconds: LEASE_SECONDS,
    renewSeconds: 3600,
    logger: { error: (object, message) => errors.push({ object, message }), debug: () => undefined },
    runs: () => ({ held: [{ uid: runUID, attempt: 1 }], released: [] }),
    now: () => Date.now() - 86_400_000,
  });
  await lease.start();
  await lease.stop();
  // The running stale-recovery marks it once a lease duration has passed since it saw that renewal.
  await waitFor(`${runName} Recovering`, async () => (recovering(await getRun(runName)) ? true : undefined), WAIT);

  // A second stale-recovery, started now, first sees the silent Lease now: fresh for a full duration.
  await recovery.stop();
  await act(runName, 'stale-recovery', { type: 'Recovered', message: 'reset for the test' });
  expect(recovering(await getRun(runName))).toBe(false);
  const fresh = new StaleRecovery({
    kubeConfig: await new NamespaceAccess(cluster, namespace.name).serviceAccountKubeConfig(
      'stale-recovery-restarted',
      STALE_RECOVERY_RULES,
    ),
    namespace: namespace.name,
    logger: { error: (object, message) => errors.push({ object, message }), debug: () => undefined, info: () => undefined },
    recheckMs: 1_000,
  });
  recovery = fresh;
  const startedAt = performance.now();
  await fresh.start();
  const until = startedAt + (LEASE_SECONDS - 1) * 1000;
  while (performance.now() < until) {
    expect(recovering(await getRun(runName))).toBe(false);
    await sleep(200);
  }
  await waitFor(`${runName} Recovering again`, async () => (recovering(await getRun(runName)) ? true : undefined), WAIT);
  expect(performance.now() - startedAt).toBeGreaterThanOrEqual(LEASE_SECONDS * 1000);
  expect(errors).toEqual([]);
}, 120_000);
