import { SCHEDULE_REASONS } from '@kruntimes/api';
import type { Run, RunPhase, RunSchedule, RunScheduleSpec, RunScheduleStatus } from '@kruntimes/api';
import { asReconciler } from '@kruntimes/controller-runtime';
import { FakeCache, RecordingLogger } from '@kruntimes/controller-runtime/testing';
import { FakeObjectClient } from '@kruntimes/run-client/testing';
import { ScheduleMetrics } from './metrics.ts';
import { rfc3339, scheduledRun, scheduledRunName } from './run-naming.ts';
import { ScheduleReconciler } from './schedule-reconciler.ts';

const KEY = 'ns/every-minute';
const NOON = Date.parse('2026-06-01T12:00:00Z');
/** Ten seconds after the noon instant of an every-minute schedule. */
const NOW = NOON + 10_000;
const NEXT_IN_MS = 50_000;

function schedule(spec: Partial<RunScheduleSpec> = {}, status?: RunScheduleStatus): RunSchedule {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'RunSchedule',
    metadata: {
      name: 'every-minute',
      namespace: 'ns',
      uid: 'schedule-uid',
      resourceVersion: '5',
      generation: 1,
      creationTimestamp: '2026-06-01T11:59:30Z',
    },
    spec: {
      schedule: '* * * * *',
      runTemplate: { spec: { runtime: 'python', source: { inline: 'print(1)' }, mode: { task: {} } } },
      ...spec,
    },
    ...(status === undefined ? {} : { status }),
  };
}

/** The Run of `at` as the schedule creates it, as the API server then holds it. */
function ownedRun(at: number, phase: RunPhase, overrides: { uid?: string; completionTime?: string } = {}): Run {
  const run = scheduledRun(schedule(), { scheduledAt: at });
  run.metadata = { ...run.metadata, uid: overrides.uid ?? `run-${String(at)}`, resourceVersion: '9', creationTimestamp: rfc3339(at) };
  run.status = { phase, ...(overrides.completionTime === undefined ? {} : { completionTime: overrides.completionTime }) };
  return run;
}

/** `runs`: the Runs the API server holds; `cached`: those the cache shows (all of them by default). */
function harness(live: RunSchedule, runs: Run[] = [], cached: Run[] = runs) {
  const clients = { runs: new FakeObjectClient<Run>(runs), runSchedules: new FakeObjectClient<RunSchedule>([live]) };
  const metrics = new ScheduleMetrics();
  const clock = { now: NOW };
  const reconciler = new ScheduleReconciler({
    runs: new FakeCache<Run>(cached),
    clients,
    logger: new RecordingLogger(),
    now: () => clock.now,
    metrics,
  });
  const schedules = new FakeCache<RunSchedule>([live]);
  const reconcile = () => asReconciler(schedules, reconciler)(KEY, new AbortController().signal);
  const status = () => clients.runSchedules.live('ns', 'every-minute')?.status;
  return { clients, metrics, clock, schedules, reconcile, status };
}

const NOON_RUN = scheduledRunName('every-minute', NOON);

test('a due instant: its Run is created, owned by the schedule, and the status records it', async () => {
  const { clients, metrics, reconcile, status } = harness(schedule());

  await expect(reconcile()).resolves.toEqual({ requeueAfterMs: NEXT_IN_MS });

  expect(clients.runs.writes.map((write) => [write.verb, write.key, write.outcome])).toEqual([['create', `ns/${NOON_RUN}`, 'ok']]);
  expect(clients.runs.live('ns', NOON_RUN)?.metadata.ownerReferences?.[0]?.uid).toBe('schedule-uid');
  expect(status()).toMatchObject({ lastScheduledAt: rfc3339(NOON), lastRunRef: { name: NOON_RUN }, active: 1, missed: 0 });
  expect(metrics.render()).toContain('kruntimes_schedule_runs_created_total{namespace="ns",schedule="every-minute"} 1\n');
});

test('reconciled again before the cache shows the Run: no second create, and the same status is not written again', async () => {
  const { clients, schedules, reconcile, status } = harness(schedule());
  await reconcile();
  const written = clients.runSchedules.live('ns', 'every-minute');
  if (written === undefined) throw new Error('the status was not kept');
  schedules.set(written);

  await reconcile();

  expect(clients.runs.writes).toHaveLength(1);
  expect(clients.runSchedules.writes).toHaveLength(1);
  expect(status()?.active).toBe(1);
});

test('a Run active in the cache: the instant is skipped (Skip), nothing is created', async () => {
  const earlier = ownedRun(NOON - 60_000, 'Running');
  const { clients, metrics, reconcile, status } = harness(schedule({}, { lastScheduledAt: rfc3339(NOON - 60_000) }), [earlier]);

  await reconcile();

  expect(clients.runs.writes).toEqual([]);
  expect(status()).toMatchObject({ lastScheduledAt: rfc3339(NOON), skipped: 1, active: 1 });
  expect(metrics.render()).toContain('kruntimes_schedule_skipped_total{namespace="ns",schedule="every-minute"} 1\n');
});

test('suspended: nothing is created, Scheduling False (Suspended), no requeue before the cap', async () => {
  const { clients, reconcile, status } = harness(schedule({ suspend: true }));

  await expect(reconcile()).resolves.toEqual({ requeueAfterMs: 60_000 });

  expect(clients.runs.writes).toEqual([]);
  expect(status()?.conditions?.[0]).toMatchObject({ status: 'False', reason: SCHEDULE_REASONS.suspended });
});

test('the name is already this schedule’s Run (a lost status write): no error, the instant is recorded', async () => {
  // Created by another replica (or an earlier attempt) and not yet in this cache.
  const { clients, reconcile, status } = harness(schedule(), [ownedRun(NOON, 'Pending')], []);

  await reconcile();

  expect(clients.runs.writes.map((write) => write.outcome)).toEqual(['AlreadyExists']);
  // Counted active once the cache shows it: its add event reconciles the schedule again.
  expect(status()).toMatchObject({ lastScheduledAt: rfc3339(NOON), active: 0 });
});

test('the name is held by a Run of another owner: reported (RunNameTaken), the instant is kept for a retry', async () => {
  const foreign = ownedRun(NOON, 'Pending');
  foreign.metadata.ownerReferences = [];
  const { reconcile, status } = harness(schedule(), [foreign], []);

  await reconcile();

  expect(status()?.lastScheduledAt).toBeUndefined();
  expect(status()?.conditions?.[0]).toMatchObject({ status: 'False', reason: SCHEDULE_REASONS.runNameTaken });
});

test('the name was taken and is gone before it could be read: an error, so the schedule is retried', async () => {
  const { clients, reconcile } = harness(schedule());
  const create = clients.runs.create.bind(clients.runs);
  clients.runs.create = async (namespace, body) => {
    await create(namespace, body);
    await clients.runs.delete(namespace, body.metadata.name ?? '');
    return { ok: false, reason: 'AlreadyExists' };
  };

  await expect(reconcile()).rejects.toThrow(`Run ns/${NOON_RUN} existed on create and is gone`);
});

test.each(['Conflict', 'NotFound'] as const)('a status write refused (%s): no error, skipped and missed not counted', async (refusal) => {
  const earlier = ownedRun(NOON - 60_000, 'Running');
  const { clients, metrics, reconcile } = harness(schedule({}, { lastScheduledAt: rfc3339(NOON - 60_000) }), [earlier]);
  clients.runSchedules.refuse('replaceStatus', KEY, refusal);

  await expect(reconcile()).resolves.toEqual({ requeueAfterMs: NEXT_IN_MS });

  expect(clients.runSchedules.writes.map((write) => write.outcome)).toEqual([refusal]);
  expect(metrics.render()).not.toContain('kruntimes_schedule_skipped_total{');
});

test('finished Runs past the history limit are deleted, fenced on the version decided from; a refused delete is no error', async () => {
  const finished = [1, 2, 3].map((minutes) =>
    ownedRun(NOON - minutes * 60_000, 'Succeeded', { completionTime: rfc3339(NOON - minutes * 60_000 + 1_000) }),
  );
  const { clients, reconcile } = harness(schedule({ successfulRunsHistoryLimit: 1 }, { lastScheduledAt: rfc3339(NOON) }), finished);
  clients.runs.refuse('delete', `ns/${finished[2]?.metadata.name ?? ''}`, 'Conflict');

  await reconcile();

  expect(clients.runs.writes.map((write) => [write.verb, write.key, write.outcome, write.body])).toEqual(
    [finished[1], finished[2]].map((run) => [
      'delete',
      `ns/${run?.metadata.name ?? ''}`,
      run === finished[2] ? 'Conflict' : 'ok',
      { preconditions: { uid: run?.metadata.uid, resourceVersion: '9' }, propagationPolicy: 'Background' },
    ]),
  );
});

test.each([
  [
    'deleted',
    (schedules: FakeCache<RunSchedule>) => {
      schedules.delete('every-minute', 'ns');
    },
  ],
  [
    'being deleted',
    (schedules: FakeCache<RunSchedule>) => {
      schedules.set({ ...schedule(), metadata: { ...schedule().metadata, deletionTimestamp: rfc3339(NOW) } });
    },
  ],
])('a schedule %s is not reconciled: no Run, no status', async (_name, remove) => {
  const { clients, schedules, reconcile } = harness(schedule());
  remove(schedules);

  await expect(reconcile()).resolves.toBeUndefined();

  expect([...clients.runs.writes, ...clients.runSchedules.writes]).toEqual([]);
});
