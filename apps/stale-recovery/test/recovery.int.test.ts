import { setTimeout as sleep } from 'node:timers/promises';
import { ApiException, CoordinationV1Api } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, CONDITION_TYPES, LABELS, LEASE_ANNOTATIONS, RUN_PLURAL } from '@kruntimes/api';
import type { Run, RunSpec } from '@kruntimes/api';
import { currentPhase, findCondition, isTerminal } from '@kruntimes/run-state';
import { NotOwnerError, RunClient } from '@kruntimes/runtimed-core';
import { SCHEDULER_RULES, Scheduler } from '@kruntimes/scheduler-core';
import { STALE_RECOVERY_RULES, StaleRecovery } from '@kruntimes/stale-recovery-core';
import { podLabelSelector } from '@kruntimes/runtime-workload';
import { waitFor } from '@kruntimes/testing';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the shared integration environment of the scheduler (real runtimed, local node, controller-manager)
import { Environment, WAIT, admin, core, objects, recordingLogger, serviceAccountKubeConfig } from '../../scheduler/test/environment.ts';
import { overlappingServing, servedInvocations } from '@kruntimes/e2e';
import { RecoveryObserver, liveRegistrations } from './invariants.ts';

/**
 * Recovery end to end: real runtimed and Runtime Servers (local node processes), the
 * controller-manager, the scheduler and stale-recovery, each with its own least-privilege
 * rules. runtimed's Pod Lease lasts 4 s (renewed every second) so that a frozen owner's
 * Lease expires within a test. Every Run must be Ready or terminal within SETTLE after the
 * fault is over (the stated bound of these tests).
 */
const LEASE_SECONDS = 4;
const SETTLE = { timeoutMs: 60_000, intervalMs: 200 };
const HANDLER = `
def handle(event, context):
    return event
`;
const functionSpec: Partial<RunSpec> = { source: { inline: HANDLER }, mode: { function: { handler: 'main:handle' } } };
const capacity = new Map<string, number>();
/** Each test waits for several Pods, recoveries and backoffs on a shared, loaded machine. */
const TEST_TIMEOUT_MS = 300_000;

let env: Environment;
let scheduler: Scheduler;
let recovery: StaleRecovery;
let observer: RecoveryObserver;
const schedulerLogger = recordingLogger();
const recoveryLogger = { ...recordingLogger(), info: (): void => undefined };
const zombies = new Set<string>();

beforeAll(async () => {
  env = await Environment.start('stale-recovery', {
    runtimed: 'real',
    runtimedEnv: { KRT_LEASE_DURATION_SECONDS: String(LEASE_SECONDS), KRT_LEASE_RENEW_SECONDS: '1' },
  });
  observer = await RecoveryObserver.start(env.name, capacity);
  scheduler = new Scheduler({
    kubeConfig: await serviceAccountKubeConfig(env.name, 'scheduler', SCHEDULER_RULES),
    namespace: env.name,
    logger: schedulerLogger,
  });
  await scheduler.start();
  recovery = new StaleRecovery({
    kubeConfig: await serviceAccountKubeConfig(env.name, 'stale-recovery', STALE_RECOVERY_RULES),
    namespace: env.name,
    logger: recoveryLogger,
    recheckMs: 1_000,
    reportingGrace: { renewals: 3, minGraceMs: 3_000 },
  });
  await recovery.start();
});

afterAll(async () => {
  observer.stop();
  await recovery.stop();
  await scheduler.stop();
  for (const uid of [...zombies]) await killZombie(uid);
  await env.stop();
});

afterEach(async () => {
  // The invariants hold through every test, and every Run settled within the bound.
  await waitFor('every Run Ready or terminal', () => Promise.resolve(observer.unsettled().length === 0 ? true : undefined), SETTLE).catch(
    () => undefined,
  );
  expect(observer.unsettled()).toEqual([]);
  expect(observer.violations).toEqual([]);
  // A failed watch restarts (see RecoveryObserver); it must not have given up.
  expect(observer.restarts).toBeLessThanOrEqual(20);
  // Never two registrations of one Run on Pods the platform can route to.
  const livePods = new Set((await core.listNamespacedPod({ namespace: env.name })).items.map((pod) => pod.metadata?.uid ?? ''));
  const registrations = await liveRegistrations(env.node.config.stateDir, env.name, livePods);
  expect([...registrations].filter(([, pods]) => pods.length > 1)).toEqual([]);
  // Over the whole run, zombies and deleted Pods included: never two registrations serving at once.
  expect(overlappingServing(await servedInvocations(env.node.config.stateDir, env.name))).toEqual([]);
  expect(recoveryLogger.errors).toEqual([]);
  expect(schedulerLogger.errors).toEqual([]);
});

const readyTrue = (run: Run): boolean =>
  currentPhase(run) === 'Ready' && findCondition(run.status?.conditions, CONDITION_TYPES.ready)?.status === 'True';
const readyReason = (run: Run): string | undefined => findCondition(run.status?.conditions, CONDITION_TYPES.ready)?.reason;

async function runtime(name: string, spec: { language: 'python' | 'bash'; replicas: number; runs: number }): Promise<void> {
  capacity.set(name, spec.runs);
  await env.createRuntime(name, spec);
  await env.readyPods(name, spec.replicas);
}

async function leaseReport(podName: string): Promise<{ held: unknown; released: unknown }> {
  const lease = await admin.makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace: env.name, name: podName });
  const annotations = lease.metadata?.annotations ?? {};
  return {
    held: JSON.parse(annotations[LEASE_ANNOTATIONS.heldRuns] ?? 'null'),
    released: JSON.parse(annotations[LEASE_ANNOTATIONS.releasedRuns] ?? 'null'),
  };
}

async function requestCancel(name: string): Promise<void> {
  await objects.patchNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: env.name,
    plural: RUN_PLURAL,
    name,
    body: [{ op: 'add', path: '/spec/cancelRequested', value: true }],
  });
}

/**
 * Ends a zombie's processes. The local node may already have ended them itself when its
 * watch showed the force-deleted Pod's deletionTimestamp before the Pod vanished; either
 * way none may survive the test.
 */
async function killZombie(uid: string): Promise<void> {
  zombies.delete(uid);
  await env.node.killZombie(uid).catch((error: unknown) => {
    if (!(error instanceof Error && error.message.startsWith('no zombie Pod'))) throw error;
  });
}

function owner(run: Run): { pod: string; uid: string } {
  return { pod: run.status?.assignedPod ?? '', uid: run.status?.assignedPodUID ?? '' };
}

test(
  '(a) the owner Pod of a Ready function is deleted: it drains, and a new attempt registers on another Pod behind the same endpoint without spending an attempt; the Pod Lease reports held and released Runs',
  async () => {
    await runtime('fa', { language: 'python', replicas: 2, runs: 1 });
    await env.createRun('fn-a', 'fa', functionSpec);
    const first = await env.waitForRun('fn-a', 'Ready', readyTrue);
    const uid = first.metadata.uid ?? '';
    const old = owner(first);
    await waitFor(
      'the owner Lease lists fn-a as held',
      async () => {
        const report = await leaseReport(old.pod);
        return JSON.stringify(report.held) === JSON.stringify([{ uid, attempt: 1 }]) ? true : undefined;
      },
      WAIT,
    );

    await core.deleteNamespacedPod({ namespace: env.name, name: old.pod });
    const second = await env.waitForRun('fn-a', 'Ready again at attempt 2', (run) => readyTrue(run) && run.status?.attempt === 2);
    expect(owner(second).uid).not.toBe(old.uid);
    expect(second.status?.endpoint?.url).toBe(first.status?.endpoint?.url);
    // The observer has a watch of its own, which may deliver this version after waitForRun's read did.
    await waitFor(
      'the observer saw attempt 2 serving',
      () => Promise.resolve(observer.servingEpochs.get(uid)?.some((e) => e.attempt === 2) === true ? true : undefined),
      WAIT,
    );
    expect(observer.servingEpochs.get(uid)?.map((e) => e.attempt)).toEqual([1, 2]);
    // A deleted Pod drains (docs/operations.md "Drain"): its owner unregistered the function,
    // reported the release and handed it over itself, a planned move that spends no attempt;
    // stale-recovery left the draining owner alone ((b2) is the path of a lost owner's Pod).
    expect(second.status?.plannedMoves).toBe(1);
    expect(recovery.metrics.recoveries('podDeletingAndUnrouted', 'requeued') + recovery.metrics.recoveries('podGone', 'requeued')).toBe(0);
    expect(observer.recovering.has(uid)).toBe(false);

    // The new owner stops the work on cancel and says so in its Lease.
    await requestCancel('fn-a');
    await env.waitForRun('fn-a', 'Cancelled', (run) => currentPhase(run) === 'Cancelled');
    await waitFor(
      'the new owner Lease lists attempt 2 as released, nothing held',
      async () => {
        const report = await leaseReport(owner(second).pod);
        const released = report.released as { uid: string; attempt: number }[];
        return JSON.stringify(report.held) === '[]' && released.some((r) => r.uid === uid && r.attempt === 2) ? true : undefined;
      },
      WAIT,
    );
  },
  TEST_TIMEOUT_MS,
);

test(
  '(b) a frozen owner (SIGSTOP): Recovering, no new attempt while its Pod exists and is not fenced; thawed: Ready again at the same attempt',
  async () => {
    await runtime('fb', { language: 'python', replicas: 2, runs: 1 });
    await env.createRun('fn-b', 'fb', functionSpec);
    const first = await env.waitForRun('fn-b', 'Ready', readyTrue);
    const uid = first.metadata.uid ?? '';
    const old = owner(first);

    env.node.freezePod(env.name, old.pod);
    const marked = await env.waitForRun('fn-b', 'Recovering', (run) => readyReason(run) === 'Recovering');
    expect(marked.status).toMatchObject({ phase: 'Ready', attempt: 1, assignedPodUID: old.uid });
    // Several Lease durations and stale-recovery rechecks later, still no new attempt: an
    // expired Lease is evidence, never a proof.
    await sleep(2 * LEASE_SECONDS * 1000);
    expect((await env.getRun('fn-b')).status).toMatchObject({ phase: 'Ready', attempt: 1, assignedPodUID: old.uid, reason: 'Recovering' });
    expect(observer.attempts.get(uid)).not.toContain(2);

    env.node.thawPod(env.name, old.pod);
    const back = await env.waitForRun('fn-b', 'Ready=True again', readyTrue);
    expect(back.status).toMatchObject({ attempt: 1, assignedPodUID: old.uid, reason: 'FunctionRegistered' });
    expect(recovery.metrics.recoveries('ownerBack', 'recovered')).toBeGreaterThanOrEqual(1);
    expect(observer.recovering.has(uid)).toBe(true);
  },
  TEST_TIMEOUT_MS,
);

test(
  '(b2) a frozen owner whose Pod is then deleted: recovery proceeds to a new attempt',
  async () => {
    await runtime('fb2', { language: 'python', replicas: 2, runs: 1 });
    await env.createRun('fn-b2', 'fb2', functionSpec);
    const first = await env.waitForRun('fn-b2', 'Ready', readyTrue);
    const old = owner(first);
    env.node.freezePod(env.name, old.pod);
    await env.waitForRun('fn-b2', 'Recovering', (run) => readyReason(run) === 'Recovering');
    await core.deleteNamespacedPod({ namespace: env.name, name: old.pod });
    const second = await env.waitForRun('fn-b2', 'Ready at attempt 2', (run) => readyTrue(run) && run.status?.attempt === 2);
    expect(owner(second).uid).not.toBe(old.uid);
    expect(second.status?.endpoint?.url).toBe(first.status?.endpoint?.url);
  },
  TEST_TIMEOUT_MS,
);

test(
  '(c) the owner Pod object is force-deleted while its processes keep running (a zombie): the Run moves to a new owner and the zombie epoch can write nothing',
  async () => {
    await runtime('fc', { language: 'python', replicas: 2, runs: 1 });
    const created = await env.createRun('fn-c', 'fc', functionSpec);
    const first = await env.waitForRun('fn-c', 'Ready', readyTrue);
    const old = owner(first);
    const zombie = await env.node.forceDeletePod(env.name, old.pod);
    zombies.add(zombie);
    expect(zombie).toBe(old.uid);

    const second = await env.waitForRun('fn-c', 'Ready at attempt 2', (run) => readyTrue(run) && run.status?.attempt === 2);
    expect(owner(second).uid).not.toBe(zombie);
    expect(second.status?.endpoint?.url).toBe(first.status?.endpoint?.url);
    expect(recovery.metrics.recoveries('podGone', 'requeued')).toBeGreaterThanOrEqual(1);

    // Whatever the zombie's runtimed tries, its epoch is over: every write re-checks it.
    const zombieWriter = new RunClient(admin);
    const epoch = { namespace: env.name, name: 'fn-c', uid: created.metadata.uid ?? '', attempt: 1, podUID: zombie };
    await expect(zombieWriter.transition(epoch, { type: 'RegistrationLost', message: 'late write of the zombie' })).rejects.toBeInstanceOf(
      NotOwnerError,
    );
    await expect(zombieWriter.removeFinalizer(epoch)).rejects.toBeInstanceOf(NotOwnerError);
    expect((await env.getRun('fn-c')).status).toMatchObject({ phase: 'Ready', attempt: 2, assignedPodUID: owner(second).uid });
    await killZombie(zombie);
  },
  TEST_TIMEOUT_MS,
);

test(
  '(d) tasks whose Pod is lost: not retrySafe -> Interrupted OwnerLost; retrySafe -> runs again; no attempts left -> Failed RetriesExhausted',
  async () => {
    await runtime('td', { language: 'bash', replicas: 1, runs: 3 });
    await env.createRun('unsafe', 'td', { source: { inline: 'sleep 300' }, mode: { task: {} } });
    await env.createRun('safe', 'td', {
      source: { inline: 'if [ "$KRT_ATTEMPT" = "1" ]; then sleep 300; fi; echo again' },
      mode: { task: {} },
      retryPolicy: { retrySafe: true, initialBackoffSeconds: 1 },
    });
    await env.createRun('once', 'td', {
      source: { inline: 'sleep 300' },
      mode: { task: {} },
      retryPolicy: { retrySafe: true, maxAttempts: 1 },
    });
    for (const name of ['unsafe', 'safe', 'once']) await env.waitForRun(name, 'Running', (run) => currentPhase(run) === 'Running');
    const [pod] = (await core.listNamespacedPod({ namespace: env.name, labelSelector: podLabelSelector('td') })).items;
    const podName = pod?.metadata?.name ?? '';
    // Frozen, then the Pod object removed at once (a graceful deletion would thaw and signal it,
    // and its runtimed could still write): the owner can write nothing, stale-recovery decides alone.
    env.node.freezePod(env.name, podName);
    const zombie = await env.node.forceDeletePod(env.name, podName);
    zombies.add(zombie);

    expect((await env.waitForRun('unsafe', 'Interrupted', (run) => currentPhase(run) === 'Interrupted')).status).toMatchObject({
      reason: 'OwnerLost',
      attempt: 1,
    });
    // The message goes into the comparison so that a failure shows who ended it and why.
    const once = (await env.waitForRun('once', 'Failed', (run) => currentPhase(run) === 'Failed')).status;
    expect({ reason: once?.reason, attempt: once?.attempt, message: once?.message }).toMatchObject({
      reason: 'RetriesExhausted',
      attempt: 1,
    });
    const safe = await env.waitForRun('safe', 'Succeeded', (run) => currentPhase(run) === 'Succeeded');
    expect(safe.status).toMatchObject({ attempt: 2 });
    expect(safe.status?.assignedPodUID).not.toBe(pod?.metadata?.uid);
    await killZombie(zombie);
  },
  TEST_TIMEOUT_MS,
);

test(
  '(e) cancel requested while the owner is lost: Cancelled only with proof that the code is gone, else Interrupted CancelUnconfirmed',
  async () => {
    await runtime('te', { language: 'bash', replicas: 1, runs: 1 });
    await env.createRun('proven', 'te', { source: { inline: 'sleep 300' }, mode: { task: {} } });
    const proven = await env.waitForRun('proven', 'Running', (run) => currentPhase(run) === 'Running');
    env.node.freezePod(env.name, owner(proven).pod);
    await requestCancel('proven');
    await env.waitForRun('proven', 'Recovering', (run) => readyReason(run) === 'Recovering');
    // The Pod object disappears at once (grace 0): the exact UID is gone, a proof.
    const zombie = await env.node.forceDeletePod(env.name, owner(proven).pod);
    zombies.add(zombie);
    expect((await env.waitForRun('proven', 'Cancelled', (run) => isTerminal(currentPhase(run)))).status).toMatchObject({
      phase: 'Cancelled',
      reason: 'Cancelled',
    });
    await killZombie(zombie);

    // A Pod stuck Terminating on a node that never answers (a local-node Pod would be
    // thawed and signalled on deletion, and its runtimed could then cancel by itself):
    // deleting and out of the endpoints proves the fence, not that the code stopped.
    const hold = 'kruntimes.test/hold';
    const stuck = await core.createNamespacedPod({
      namespace: env.name,
      body: {
        metadata: { name: 'stuck-0', labels: { [LABELS.runtime]: 'te-stuck' }, finalizers: [hold] },
        spec: { nodeName: 'unreachable-node', containers: [{ name: 'runtimed', image: 'kruntimes/runtimed:dev' }] },
      },
    });
    await env.createRun('unproven', 'te-stuck', { source: { inline: 'sleep 300' }, mode: { task: {} } });
    // The scheduler finds no Runtime te-stuck and says so; bind and claim as the scheduler and runtimed would have.
    await waitFor(
      'unproven bound to the stuck Pod',
      async () => {
        try {
          await env.act('unproven', 'scheduler', { type: 'Bind', pod: 'stuck-0', podUID: stuck.metadata?.uid ?? '' });
          return true;
        } catch (error) {
          if (error instanceof ApiException && error.code === 409) return undefined;
          throw error;
        }
      },
      WAIT,
    );
    await env.act('unproven', 'runtimed', { type: 'Claim' });
    await requestCancel('unproven');
    await core.deleteNamespacedPod({ namespace: env.name, name: 'stuck-0' });
    try {
      const ended = await env.waitForRun('unproven', 'terminal', (run) => isTerminal(currentPhase(run)));
      expect(ended.status).toMatchObject({ phase: 'Interrupted', reason: 'CancelUnconfirmed', attempt: 1 });
    } finally {
      await core.patchNamespacedPod({ namespace: env.name, name: 'stuck-0', body: [{ op: 'remove', path: '/metadata/finalizers' }] });
    }
  },
  TEST_TIMEOUT_MS,
);
