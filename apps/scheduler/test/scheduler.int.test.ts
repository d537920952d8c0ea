import { API_GROUP, API_VERSION, RUN_PLURAL, RUN_REASONS } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import type { Scheduler } from '@kruntimes/scheduler-core';
import { waitFor } from '@kruntimes/testing';
import { Environment, WAIT, objects, recordingLogger } from './environment.ts';
import type { RunObserver } from './environment.ts';

let env: Environment;
let scheduler: Scheduler | undefined;
let observer: RunObserver | undefined;
let logger: ReturnType<typeof recordingLogger>;

beforeEach(async () => {
  env = await Environment.start('scheduler');
  logger = recordingLogger();
});

afterEach(async () => {
  observer?.stop();
  observer = undefined;
  await scheduler?.stop();
  scheduler = undefined;
  await env.stop();
});

async function startScheduler(): Promise<Scheduler> {
  scheduler = await env.startScheduler(logger);
  return scheduler;
}

const phase = (run: Run): string => run.status?.phase ?? 'Pending';

test('a Runtime of 3 x 2: 6 of 7 Runs bound, the 7th waits with NoCapacity until one finishes; no Pod ever holds more than 2', async () => {
  await env.createRuntime('shell', { replicas: 3, runs: 2 });
  const pods = await env.readyPods('shell', 3);
  observer = await env.observeRuns(2);
  const started = await startScheduler();

  for (let i = 1; i <= 7; i += 1) await env.createRun(`run-${i}`, 'shell');
  const runs = await waitFor(
    '6 Runs Scheduled and 1 Pending with NoCapacity',
    async () => {
      const all = await env.listRuns();
      const scheduled = all.filter((run) => phase(run) === 'Scheduled');
      const waiting = all.filter((run) => phase(run) === 'Pending' && run.status?.reason === RUN_REASONS.noCapacity);
      return scheduled.length === 6 && waiting.length === 1 ? all : undefined;
    },
    WAIT,
  );
  // Oldest first: the last one created is the one that waits.
  const byName = new Map(runs.map((run) => [run.metadata.name ?? '', run]));
  expect(phase(byName.get('run-7')!)).toBe('Pending');
  for (const run of runs.filter((r) => phase(r) === 'Scheduled')) {
    expect(run.status).toMatchObject({ attempt: 1, reason: RUN_REASONS.scheduled });
    expect(pods.map((p) => [p.metadata?.name, p.metadata?.uid])).toContainEqual([run.status?.assignedPod, run.status?.assignedPodUID]);
  }
  // The Runtime's status counts the same capacity.
  await waitFor(
    'Runtime status 6/6',
    async () => {
      const status = (await env.getRuntime('shell')).status;
      return status?.totalCapacity === 6 && status.usedCapacity === 6 && status.readyPods === 3 ? status : undefined;
    },
    WAIT,
  );

  // Waiting is not polling: once the last events (the Runtime's status write) are
  // delivered, nothing changes, and no placement pass runs at all.
  const sleep = (ms: number): Promise<unknown> => new Promise((resolve) => setTimeout(resolve, ms));
  let passes = -1;
  for (let i = 0; i < 20 && passes !== started.metrics.passes; i += 1) {
    passes = started.metrics.passes;
    await sleep(1_000);
  }
  await sleep(3_000);
  expect(started.metrics.passes).toBe(passes);

  // run-3 finishes (the test plays runtimed): its unit frees and run-7 takes it.
  const freed = byName.get('run-3')!.status?.assignedPodUID;
  await env.act('run-3', 'runtimed', { type: 'Claim' });
  await env.act('run-3', 'runtimed', { type: 'Succeeded' });
  const seventh = await env.waitForRun('run-7', 'bound', (run) => phase(run) === 'Scheduled');
  expect(seventh.status?.assignedPodUID).toBe(freed);

  observer.stop();
  expect(observer.watchErrors).toEqual([]);
  expect(observer.overcommits).toEqual([]);
  expect(observer.maxHeld).toBe(2);
  expect(observer.doubleBound()).toEqual([]);
  // The test may read run-7's new status before the scheduler has processed the answer
  // to its own write (where it counts the bind): wait, bounded, for that count.
  await waitFor('the scheduler to count its 7th bind', () => Promise.resolve(started.metrics.binds >= 7 ? true : undefined), {
    timeoutMs: 10_000,
    intervalMs: 50,
  });
  expect(started.metrics.binds).toBe(7);
  expect(started.metrics.render()).toContain('kruntimes_scheduler_pending_runs 0');
  expect(logger.errors).toEqual([]);
  expect(env.logger.errors).toEqual([]);
});

test('Unschedulable reasons, placement as soon as Pods appear, cancel before assignment, and retry backoff', async () => {
  await env.createRuntime('empty', { replicas: 0, runs: 1 });
  observer = await env.observeRuns(1);
  await startScheduler();

  await env.createRun('orphan', 'missing');
  // Retry-safe: the test requeues it after a failed attempt, which a task that is not retry-safe never gets.
  await env.createRun('waiting', 'empty', { retryPolicy: { retrySafe: true } });
  await env.waitForRun(
    'orphan',
    'RuntimeNotFound',
    (run) => phase(run) === 'Pending' && run.status?.reason === RUN_REASONS.runtimeNotFound,
  );
  await env.waitForRun('waiting', 'NoReadyPods', (run) => phase(run) === 'Pending' && run.status?.reason === RUN_REASONS.noReadyPods);

  // Cancelled before assignment: ends at once, never bound.
  await objects.patchNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: env.name,
    plural: RUN_PLURAL,
    name: 'orphan',
    body: [{ op: 'add', path: '/spec/cancelRequested', value: true }],
  });
  const cancelled = await env.waitForRun('orphan', 'Cancelled', (run) => phase(run) === 'Cancelled');
  expect(cancelled.status).toMatchObject({ reason: RUN_REASONS.cancelledBeforeStart });
  expect(cancelled.status?.completionTime).toBeDefined();
  expect(observer.everAssigned.has('orphan')).toBe(false);

  // A Pod appears: the waiting Run is bound without any poll (a Pod event wakes its Runtime).
  await objects.patchNamespacedCustomObject({
    group: API_GROUP,
    version: API_VERSION,
    namespace: env.name,
    plural: 'runtimes',
    name: 'empty',
    body: [{ op: 'replace', path: '/spec/replicas', value: 1 }],
  });
  await env.waitForRun('waiting', 'bound', (run) => phase(run) === 'Scheduled');

  // Requeued with a 3 s backoff (the test plays runtimed after a failed attempt): bound again, not before notBefore.
  await env.act('waiting', 'runtimed', { type: 'Claim' });
  const requeued = await env.act('waiting', 'runtimed', {
    type: 'Requeue',
    cause: 'attemptFailed',
    backoffSeconds: 3,
    message: 'attempt failed',
  });
  const notBefore = Date.parse(requeued.status?.notBefore ?? '');
  const rebound = await env.waitForRun('waiting', 'bound again', (run) => phase(run) === 'Scheduled');
  expect(Date.now()).toBeGreaterThanOrEqual(notBefore);
  expect(rebound.status).toMatchObject({ attempt: 2 });
  expect(rebound.status?.notBefore).toBeUndefined();

  observer.stop();
  expect(observer.overcommits).toEqual([]);
  expect(logger.errors).toEqual([]);
});
