import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, POD_ANNOTATIONS, RUN_PLURAL } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { kruntimesClients, writeTransition } from '@kruntimes/run-client';
import { System, invokeLoop, longestGapMs, observeReasons, overlappingServing, servedInvocations } from '../src/index.ts';

/**
 * The drain (docs/operations.md "Drain") on the real control plane and Runtime Pods: a Pod
 * told to stop (deleted with its grace period, as a rollout or an eviction does) hands its
 * function Runs over and lets its tasks finish. Every Run starts on one Pod (the Runtime has
 * one), a second Pod comes up, and the first is deleted: tasks that fit the window Succeed, a
 * longer one ends Interrupted (DrainWindowExceeded), each function is Ready on another Pod at
 * attempt 2 with plannedMoves 1, invoked through the gateway in a loop all along with no
 * invocation executed twice, and a Run bound to the stopping Pod but not claimed is given
 * back (PodDraining) and runs elsewhere. stale-recovery runs beside it and must leave the
 * draining Pod's Runs alone.
 */
const RUNTIME = 'drain';
const DRAIN_SECONDS = 25;
const GRACE_SECONDS = 60;
const HANDLER = 'def handle(event, context):\n    return event\n';
const FUNCTIONS = ['fn-a', 'fn-b'];
const SHORT_TASKS = ['task-a', 'task-b'];
const LONG_TASK = 'task-long';
const GIVEN_BACK = 'task-given-back';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

let system: System;

beforeAll(async () => {
  system = await System.start({
    prefix: 'drain',
    staleRecovery: true,
    // The drain window as the Runtime's spec.drainSeconds sets it; a short Lease so that
    // stale-recovery would act within the drain if it took the Pod for lost.
    podEnv: { KRT_DRAIN_SECONDS: String(DRAIN_SECONDS), KRT_LEASE_DURATION_SECONDS: '4', KRT_LEASE_RENEW_SECONDS: '1' },
  });
  await system.grantGetRuns('alice');
  if (process.env.KRT_KEEP_LOGS === '1') console.log(`logs in ${system.dir}`);
  await system.createRuntime(RUNTIME, { language: 'python', replicas: 1, runs: 8, drainSeconds: DRAIN_SECONDS });
  await system.waitRuntimeReady(RUNTIME, 1);
}, 240_000);

afterAll(async () => {
  await system.stop({ keepLogs: process.env.KRT_KEEP_LOGS === '1' });
});

async function createTask(name: string, source: string): Promise<Run> {
  const body: Run = {
    apiVersion: `${API_GROUP}/${API_VERSION}`,
    kind: 'Run',
    metadata: { name },
    spec: { runtime: RUNTIME, source: { inline: source }, mode: { task: {} } },
  };
  return (await system.objects.createNamespacedCustomObject({ ...runs(), body })) as Run;
}

function runs(): { group: string; version: string; namespace: string; plural: string } {
  return { group: API_GROUP, version: API_VERSION, namespace: system.name, plural: RUN_PLURAL };
}

it('a deleted Pod drains: tasks finish, functions move at attempt 2 without spending an attempt, nothing runs twice', async () => {
  const functions = await Promise.all(FUNCTIONS.map((name) => system.createFunctionRun(name, RUNTIME, HANDLER, 'main:handle')));
  await Promise.all(FUNCTIONS.map((name) => system.waitReady(name)));
  await Promise.all(SHORT_TASKS.map((name) => createTask(name, 'import time\ntime.sleep(15)\nprint("done")\n')));
  await createTask(LONG_TASK, 'import time\ntime.sleep(300)\n');
  for (const name of [...SHORT_TASKS, LONG_TASK]) await system.waitForRun(name, 'Running', (run) => run.status?.phase === 'Running');
  const victim = await system.assignedPod(FUNCTIONS[0] ?? '');
  const victimName = victim.metadata?.name ?? '';
  const victimUID = victim.metadata?.uid ?? '';
  for (const name of [...FUNCTIONS, ...SHORT_TASKS, LONG_TASK]) expect((await system.getRun(name)).status?.assignedPodUID).toBe(victimUID);

  // A second Pod to move to.
  await system.objects.patchNamespacedCustomObject(
    { group: API_GROUP, version: API_VERSION, namespace: system.name, plural: 'runtimes', name: RUNTIME, body: { spec: { replicas: 2 } } },
    mergePatch,
  );
  await system.waitRuntimeReady(RUNTIME, 2);

  const observer = await observeReasons(system);
  const loops = functions.map((run) => invokeLoop(system, RUNTIME, run));
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const deletedAt = Date.now();
  await system.core.deleteNamespacedPod({ namespace: system.name, name: victimName, body: { gracePeriodSeconds: GRACE_SECONDS } });

  for (const name of FUNCTIONS) {
    await system.waitForRun(name, 'Ready at attempt 2', (run) => run.status?.phase === 'Ready' && run.status.attempt === 2, 60_000);
  }
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const answered = await Promise.all(loops.map((loop) => loop.stop()));

  // A Run bound to the stopping Pod (still draining its long task) but not claimed, as by a scheduler
  // that had not seen the stop: the scheduler is down meanwhile, the bind written as it would write it.
  const schedulerBack = system.restartScheduler(6_000);
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  await createTask(GIVEN_BACK, 'print("ran elsewhere")\n');
  const bound = await writeTransition(
    kruntimesClients(system.admin).runs,
    { namespace: system.name, name: GIVEN_BACK },
    { type: 'Bind', pod: victimName, podUID: victimUID },
    { writer: 'scheduler', now: () => new Date().toISOString() },
  );
  expect(bound.ok).toBe(true);
  await system.waitForRun(GIVEN_BACK, 'given back (PodDraining)', (run) => run.status?.reason === 'PodDraining', 30_000);
  await schedulerBack;

  for (const name of SHORT_TASKS) {
    await system.waitForRun(name, 'Succeeded', (run) => run.status?.phase === 'Succeeded', (DRAIN_SECONDS + 30) * 1000);
  }
  const long = await system.waitForRun(
    LONG_TASK,
    'Interrupted at the end of the drain window',
    (run) => run.status?.phase === 'Interrupted',
    (DRAIN_SECONDS + 40) * 1000,
  );
  expect(long.status?.reason).toBe('DrainWindowExceeded');
  const givenBack = await system.waitForRun(GIVEN_BACK, 'Succeeded elsewhere', (run) => run.status?.phase === 'Succeeded', 60_000);
  expect(givenBack.status?.attempt).toBe(1);
  expect(givenBack.status?.assignedPodUID).not.toBe(victimUID);
  observer.stop();
  expect(observer.errors).toEqual([]);

  for (const [index, name] of FUNCTIONS.entries()) {
    const run = await system.getRun(name);
    expect(run.status).toMatchObject({ phase: 'Ready', attempt: 2, plannedMoves: 1 });
    expect(run.status?.assignedPodUID).not.toBe(victimUID);
    expect(observer.reasons.get(name)).toContain('Drained');
    expect(observer.reasons.get(name)).not.toContain('RetryBackoff');
    const events = await system.core.listNamespacedEvent({ namespace: system.name, fieldSelector: `involvedObject.name=${name}` });
    expect(events.items.filter((event) => event.reason === 'Drained').map((event) => event.type)).toEqual(['Normal']);
    const { oks, others, unavailableWithoutRetryAfter } = answered[index] ?? {
      oks: [],
      others: new Map(),
      unavailableWithoutRetryAfter: 0,
    };
    expect(unavailableWithoutRetryAfter).toBe(0);
    // Printed, not asserted: a timing on a shared machine (goal: under 1 s).
    console.log(
      `${name}: longest time without a 200 after the delete ${String(longestGapMs(oks, deletedAt))} ms; ${String(oks.length)} answers 200, others ${JSON.stringify([...others])}`,
    );
  }
  expect(observer.reasons.get(GIVEN_BACK)).toContain('PodDraining');
  expect(observer.reasons.get(LONG_TASK)).not.toContain('OwnerLost');
  for (const name of SHORT_TASKS) expect(observer.reasons.get(name)).not.toContain('Recovering');

  // The invariant: one registration of a Run UID serves at a time, and no invocation ran twice.
  const served = await servedInvocations(system.node.config.stateDir, system.name);
  expect(overlappingServing(served)).toEqual([]);
  const ids = served.map((s) => `${s.runUid}/${s.invocationId}`);
  expect(ids.length).toBeGreaterThan(0);
  expect(new Set(ids).size).toBe(ids.length);
}, 300_000);

/** Writes the scheduler's bind of a Run to a Pod, as a scheduler that had not seen the Pod's mark would. */
async function bindTo(name: string, pod: { name: string; uid: string }): Promise<void> {
  const bound = await writeTransition(
    kruntimesClients(system.admin).runs,
    { namespace: system.name, name },
    { type: 'Bind', pod: pod.name, podUID: pod.uid },
    { writer: 'scheduler', now: () => new Date().toISOString() },
  );
  expect(bound.ok).toBe(true);
}

it('a Pod marked for scale-down refuses claims (PodDraining) and takes them again once the mark is removed', async () => {
  const pods = await system.waitRuntimeReady(RUNTIME, 2);
  const marked = pods.find((pod) => pod.metadata?.deletionTimestamp === undefined);
  const pod = { name: marked?.metadata?.name ?? '', uid: marked?.metadata?.uid ?? '' };
  const annotate = async (value: string | null): Promise<void> => {
    await system.core.patchNamespacedPod(
      { namespace: system.name, name: pod.name, body: { metadata: { annotations: { [POD_ANNOTATIONS.scaleDown]: value } } } },
      mergePatch,
    );
    // runtimed sees its Pod through its watch: give it a moment.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  };
  // The scheduler is down while the binds are written here.
  const schedulerBack = system.restartScheduler(10_000);
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  await annotate('true');
  await createTask('marked', 'print("placed again")\n');
  await bindTo('marked', pod);
  const refused = await system.waitForRun('marked', 'given back (PodDraining)', (run) => run.status?.reason === 'PodDraining', 5_000);
  expect(refused.status).toMatchObject({ phase: 'Pending', attempt: 1 });
  await annotate(null);
  await createTask('unmarked', 'print("claimed")\n');
  await bindTo('unmarked', pod);
  const claimed = await system.waitForRun('unmarked', 'Succeeded on the Pod', (run) => run.status?.phase === 'Succeeded', 30_000);
  expect(claimed.status?.assignedPodUID).toBe(pod.uid);
  await schedulerBack;
  await system.waitForRun('marked', 'Succeeded once placed again', (run) => run.status?.phase === 'Succeeded', 30_000);
}, 120_000);
