// Issue 21: runtimed refuses a claim beyond its Pod's capacity (spec.runs, KRT_RUNS_PER_POD),
// whoever wrote the assignment: here the test binds through the status subresource, as a
// scheduler leader that lost its lease (partitioned) would. The refused Run goes back to
// Pending without the assignment and says why (Ready=False PodAtCapacity); the scheduler
// then places it again like any Pending Run.
import { API_GROUP, API_VERSION, LABELS, RUNTIME_PLURAL, RUN_REASONS } from '@kruntimes/api';
import type { Run, RunSpec, Runtime } from '@kruntimes/api';
import type { V1Pod } from '@kubernetes/client-node';
import type { ControllerLogger } from '@kruntimes/controller-runtime';
import { currentPhase, findCondition } from '@kruntimes/run-state';
import { RUNTIME_COMPONENT } from '@kruntimes/runtime-workload';
import { SCHEDULER_RULES, Scheduler } from '@kruntimes/scheduler-core';
import { NamespaceAccess, waitFor } from '@kruntimes/testing';
import { RuntimeEnvironment, WAIT } from './runtime-pods.ts';

let env: RuntimeEnvironment;
let full: V1Pod;
let spare: V1Pod;
let scheduler: Scheduler | undefined;

/** Runs until cancelled: it holds its unit for the whole test. */
const LONG_TASK: RunSpec = { runtime: 'rt', source: { inline: 'echo started\nsleep 300\n' }, mode: { task: {} } };
const CAPACITY_ONE = { KRT_RUNS_PER_POD: '1' };

beforeAll(async () => {
  env = await RuntimeEnvironment.start('runtimed-capacity');
  // Two Pods of a Runtime with `runs: 1`, as its Pod template makes them (KRT_RUNS_PER_POD).
  [full, spare] = await Promise.all([
    env.createRuntimePod('bash-0', 'bash', 'rt', CAPACITY_ONE),
    env.createRuntimePod('bash-1', 'bash', 'rt', CAPACITY_ONE),
  ]);
});

afterAll(async () => {
  await scheduler?.stop();
  await env.stop();
});

const phase = (run: Run) => currentPhase(run);
const isRunning = (run: Run) => phase(run) === 'Running';
const refused = (run: Run) => phase(run) === 'Pending' && run.status?.reason === RUN_REASONS.podAtCapacity;

test('a Run bound to a full Pod is refused: back to Pending without the assignment, Ready=False PodAtCapacity; the Run holding the unit is untouched', async () => {
  await env.createRun('first', LONG_TASK);
  await env.bind('first', full);
  const first = await env.waitForRun('first', 'Running', isRunning);

  // A second bind to the same Pod, as a partitioned old scheduler leader would write it.
  await env.createRun('second', LONG_TASK);
  await env.bind('second', full);
  const second = await env.waitForRun('second', 'refused with PodAtCapacity', refused);

  expect(second.status?.assignedPod).toBeUndefined();
  expect(second.status?.assignedPodUID).toBeUndefined();
  // Nothing ran: the attempt stays, and no startTime was ever set.
  expect(second.status?.attempt).toBe(1);
  expect(second.status?.startTime).toBeUndefined();
  expect(findCondition(second.status?.conditions, 'Ready')).toMatchObject({ status: 'False', reason: RUN_REASONS.podAtCapacity });
  expect(second.status?.message).toBe(
    'Pod bash-0 already holds 1 of its 1 Runs (spec.runs); claiming this one would exceed it, so it was given back to be scheduled again',
  );

  const firstNow = await env.getRun('first');
  expect(firstNow.status).toMatchObject({
    phase: 'Running',
    attempt: first.status?.attempt,
    assignedPodUID: full.metadata?.uid,
    startTime: first.status?.startTime,
    reason: first.status?.reason,
  });
  const log = (await env.logs('bash-0', 'runtimed')).filter((line) => line.runUID === second.metadata.uid);
  expect(log.filter((line) => line.msg === 'claimed')).toEqual([]);
  expect(log.some((line) => typeof line.msg === 'string' && line.msg.startsWith('refused the claim'))).toBe(true);
});

test('two Runs bound to the last unit of a Pod at once: exactly one is claimed, the other is refused', async () => {
  await Promise.all([env.createRun('x', LONG_TASK), env.createRun('y', LONG_TASK)]);
  await Promise.all([env.bind('x', spare), env.bind('y', spare)]);
  const [x, y] = await waitFor(
    'one of x and y Running on bash-1, the other refused',
    async () => {
      const runs = await Promise.all([env.getRun('x'), env.getRun('y')]);
      const running = runs.filter(isRunning);
      const given = runs.filter(refused);
      return running.length === 1 && given.length === 1 ? runs : undefined;
    },
    WAIT,
  );
  const winner = isRunning(x) ? x : y;
  expect(winner.status?.assignedPodUID).toBe(spare.metadata?.uid);
});

test('the scheduler places a refused Run again once a unit is free, at the same attempt, and runtimed claims it', async () => {
  // The Runtime the Pods belong to (no controller-manager here: the test made its Pods).
  const runtime: Runtime = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Runtime',
    metadata: { name: 'rt' },
    spec: { language: 'bash', runs: 1 },
  };
  await env.objects.createNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: env.name,
    plural: RUNTIME_PLURAL,
    body: runtime,
  });
  // The scheduler watches Runtime Pods by their component label, which the Deployment's Pods carry.
  for (const pod of ['bash-0', 'bash-1']) {
    await env.core.patchNamespacedPod({
      namespace: env.name,
      name: pod,
      body: [{ op: 'add', path: `/metadata/labels/${LABELS.component.replace('/', '~1')}`, value: RUNTIME_COMPONENT }],
    });
  }
  const errors: string[] = [];
  const logger: ControllerLogger = { error: (_object, message) => errors.push(message), debug: () => undefined };
  scheduler = new Scheduler({
    kubeConfig: await new NamespaceAccess(env.cluster, env.name).serviceAccountKubeConfig('scheduler', SCHEDULER_RULES),
    namespace: env.name,
    logger,
  });
  await scheduler.start();

  // Both Pods are full: the refused Runs stay Pending, now NoCapacity.
  await env.waitForRun(
    'second',
    'Pending with NoCapacity',
    (run) => phase(run) === 'Pending' && run.status?.reason === RUN_REASONS.noCapacity,
  );

  // Free bash-0: the oldest Pending Run (second) gets its unit.
  await env.patchRunSpec('first', { cancelRequested: true });
  await env.waitForRun('first', 'Cancelled', (run) => phase(run) === 'Cancelled');
  const second = await env.waitForRun('second', 'Running', isRunning);
  expect(second.status).toMatchObject({ assignedPod: 'bash-0', assignedPodUID: full.metadata?.uid, attempt: 1 });
  expect(errors).toEqual([]);
});
