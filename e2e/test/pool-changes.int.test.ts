import type { V1Pod } from '@kubernetes/client-node';
import { POD_ANNOTATIONS } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { kruntimesClients } from '@kruntimes/run-client';
import type { KruntimesClients } from '@kruntimes/run-client';
import { podLabelSelector } from '@kruntimes/runtime-workload';
import { waitFor } from '@kruntimes/testing';
import { System, WAIT, invokeLoop, longestGapMs, observeReasons, overlappingServing, servedInvocations } from '../src/index.ts';
import type { InvokeLoopResult, ReasonHistory } from '../src/index.ts';

/**
 * A pool that changes never cuts work short (issue 42, docs/operations.md "Elastic pools"):
 * a rollout of a Runtime of 3 Pods, then its replicas lowered from 3 to 1, each while its
 * function Runs are invoked in a loop through the gateway and tasks run. Every task that
 * fits the drain window Succeeds, every function Run moves as a planned move (its attempts
 * unspent: attempt = 1 + plannedMoves), no invocation runs twice, and the scale-down
 * removes the Pod that holds nothing first (a function that no longer fits waits Pending for a
 * slot, its attempts unspent). The longest time without a 200 per function is
 * printed (a timing on a shared machine, not asserted).
 */
const RUNTIME = 'pool';
const DRAIN_SECONDS = 40;
const HANDLER = 'def handle(event, context):\n    return event\n';
const FUNCTIONS = ['fn-a', 'fn-b', 'fn-c'];

let system: System;
let clients: KruntimesClients;

beforeAll(async () => {
  system = await System.start({ prefix: 'pool', staleRecovery: true });
  clients = kruntimesClients(system.admin);
  await system.grantGetRuns('alice');
  await system.createRuntime(RUNTIME, { language: 'python', replicas: 3, runs: 2, drainSeconds: DRAIN_SECONDS });
  await system.waitRuntimeReady(RUNTIME, 3);
}, 240_000);

afterAll(async () => {
  await system.stop({ keepLogs: process.env.KRT_KEEP_LOGS === '1' });
});

async function createTask(name: string, seconds: number): Promise<void> {
  const created = await clients.runs.create(system.name, {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name },
    spec: { runtime: RUNTIME, source: { inline: `import time\ntime.sleep(${String(seconds)})\nprint("done")\n` }, mode: { task: {} } },
  });
  if (!created.ok) throw new Error(`creating ${name}: ${created.reason}`);
}

async function patchRuntime(spec: Record<string, unknown>): Promise<void> {
  const patched = await clients.runtimes.mergePatch(system.name, RUNTIME, { spec });
  if (!patched.ok) throw new Error(`patching the Runtime: ${patched.reason}`);
}

async function livePods(): Promise<V1Pod[]> {
  const pods = await system.core.listNamespacedPod({ namespace: system.name, labelSelector: podLabelSelector(RUNTIME) });
  return pods.items.filter((pod) => pod.metadata?.deletionTimestamp === undefined);
}

async function runsNow(): Promise<Map<string, Run>> {
  return new Map((await clients.runs.list(system.name)).map((run) => [run.metadata.name ?? '', run]));
}

/** The checks every pool change must pass, and the printed gaps. */
async function expectNothingCutShort(
  change: string,
  observer: ReasonHistory,
  answered: readonly InvokeLoopResult[],
  startedAt: number,
  tasks: readonly string[],
): Promise<void> {
  const runs = await runsNow();
  for (const name of tasks) {
    expect(runs.get(name)?.status?.phase).toBe('Succeeded');
    expect(observer.reasons.get(name)).not.toContain('Interrupted');
  }
  for (const [index, name] of FUNCTIONS.entries()) {
    const status = runs.get(name)?.status;
    // Every new attempt was a planned move: none of maxAttempts was spent.
    expect(status?.attempt).toBe(1 + (status?.plannedMoves ?? 0));
    expect(observer.reasons.get(name)).not.toContain('RetryBackoff');
    expect(observer.reasons.get(name)).not.toContain('OwnerLost');
    const result = answered[index];
    expect(result?.unavailableWithoutRetryAfter).toBe(0);
    console.log(
      `${change}: ${name} attempt ${String(status?.attempt)}, plannedMoves ${String(status?.plannedMoves ?? 0)}; longest time without a 200 ${String(longestGapMs(result?.oks ?? [], startedAt))} ms; ${String(result?.oks.length ?? 0)} answers 200, others ${JSON.stringify([...(result?.others ?? [])])}`,
    );
  }
  const served = await servedInvocations(system.node.config.stateDir, system.name);
  expect(overlappingServing(served)).toEqual([]);
  const ids = served.map((s) => `${s.runUid}/${s.invocationId}`);
  expect(new Set(ids).size).toBe(ids.length);
}

it('a rollout: every task finishes, every function moves to a Pod of the new template without spending an attempt', async () => {
  const functions = await Promise.all(FUNCTIONS.map((name) => system.createFunctionRun(name, RUNTIME, HANDLER, 'main:handle')));
  await Promise.all(FUNCTIONS.map((name) => system.waitReady(name)));
  const tasks = ['roll-1', 'roll-2', 'roll-3'];
  for (const name of tasks) await createTask(name, 20);
  for (const name of tasks) await system.waitForRun(name, 'Running', (run) => run.status?.phase === 'Running');
  const oldPods = new Set((await livePods()).map((pod) => pod.metadata?.uid));

  const observer = await observeReasons(system);
  const loops = functions.map((run) => invokeLoop(system, RUNTIME, run));
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const startedAt = Date.now();
  // Any change of the Pod template rolls the Deployment.
  await patchRuntime({ resources: { requests: { cpu: '11m' } } });

  for (const name of FUNCTIONS) {
    await system.waitForRun(
      name,
      'Ready on a Pod of the new template',
      (run) => run.status?.phase === 'Ready' && !oldPods.has(run.status.assignedPodUID),
      (DRAIN_SECONDS + 60) * 1000,
    );
  }
  for (const name of tasks)
    await system.waitForRun(name, 'Succeeded', (run) => run.status?.phase === 'Succeeded', (DRAIN_SECONDS + 30) * 1000);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const answered = await Promise.all(loops.map((loop) => loop.stop()));
  observer.stop();
  expect(observer.errors).toEqual([]);
  await expectNothingCutShort('rollout', observer, answered, startedAt, tasks);
  for (const name of FUNCTIONS) expect(observer.reasons.get(name)).toContain('Drained');
}, 300_000);

it('replicas 3 -> 1: the Pod that holds nothing goes first, a task finishes, functions that no longer fit wait with attempts unspent', async () => {
  await system.waitRuntimeReady(RUNTIME, 3);
  await createTask('shrink-1', 15);
  const task = await system.waitForRun('shrink-1', 'Running', (run) => run.status?.phase === 'Running');
  // One Pod is emptied: the function on a Pod without the task is deleted (one function per Pod, spread).
  const before = await runsNow();
  expect(new Set(FUNCTIONS.map((name) => before.get(name)?.status?.assignedPodUID)).size).toBe(3);
  const gone = FUNCTIONS.find((name) => before.get(name)?.status?.assignedPodUID !== task.status?.assignedPodUID) ?? '';
  const emptied = before.get(gone)?.status?.assignedPodUID;
  await system.deleteRun(gone);
  // The autoscaler drops the emptied Pod's deletion cost (a Pod holding Runs has 1): the ReplicaSet takes it first.
  await waitFor(
    'the emptied Pod without a deletion cost',
    async () => {
      const pod = (await livePods()).find((candidate) => candidate.metadata?.uid === emptied);
      return pod?.metadata?.annotations?.[POD_ANNOTATIONS.deletionCost] === undefined ? true : undefined;
    },
    WAIT,
  );
  const kept = FUNCTIONS.filter((name) => name !== gone);
  const functions = kept.map((name) => before.get(name)).filter((run) => run !== undefined);

  const observer = await observeReasons(system);
  const loops = functions.map((run) => invokeLoop(system, RUNTIME, run));
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const startedAt = Date.now();
  await patchRuntime({ replicas: 1 });

  await system.waitForRun('shrink-1', 'Succeeded', (run) => run.status?.phase === 'Succeeded', (DRAIN_SECONDS + 30) * 1000);
  // The Pod left has two slots: a function that no longer fits waits Pending (its attempt unspent) until the task ends.
  for (const name of kept) {
    await system.waitForRun(name, 'Ready', (run) => run.status?.phase === 'Ready', (DRAIN_SECONDS + 60) * 1000);
  }
  const remaining = await livePods();
  expect(remaining).toHaveLength(1);
  expect(remaining.map((pod) => pod.metadata?.uid)).not.toContain(emptied);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const answered = await Promise.all(loops.map((loop) => loop.stop()));
  observer.stop();
  expect(observer.errors).toEqual([]);
  const runs = await runsNow();
  for (const [index, name] of kept.entries()) {
    const status = runs.get(name)?.status;
    expect(status?.attempt).toBe(1 + (status?.plannedMoves ?? 0));
    expect(observer.reasons.get(name)).not.toContain('RetryBackoff');
    console.log(
      `replicas 3 -> 1: ${name} attempt ${String(status?.attempt)}, plannedMoves ${String(status?.plannedMoves ?? 0)}; longest time without a 200 ${String(longestGapMs(answered[index]?.oks ?? [], startedAt))} ms`,
    );
  }
  const served = await servedInvocations(system.node.config.stateDir, system.name);
  expect(overlappingServing(served)).toEqual([]);
  const ids = served.map((s) => `${s.runUid}/${s.invocationId}`);
  expect(new Set(ids).size).toBe(ids.length);
}, 300_000);
