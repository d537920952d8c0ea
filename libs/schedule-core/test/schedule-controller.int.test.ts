import { ApiException, CustomObjectsApi } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, LABELS, RUN_PLURAL, RUN_SCHEDULE_PLURAL, SCHEDULE_ANNOTATIONS } from '@kruntimes/api';
import type { Run, RunSchedule, RunScheduleSpec } from '@kruntimes/api';
import type { ControllerLogger } from '@kruntimes/controller-runtime';
import { transition } from '@kruntimes/run-state';
import type { RunEvent, WriterRole } from '@kruntimes/run-state';
import { Cluster, NamespaceAccess, waitFor } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { SCHEDULE_CONTROLLER_RULES, ScheduleController, ScheduleMetrics, rfc3339, scheduledRunName } from '../src/index.ts';

const cluster = Cluster.fromEnvironment();
const admin = cluster.kubeConfig();
const objects = admin.makeApiClient(CustomObjectsApi);
const WAIT = { timeoutMs: 30_000, intervalMs: 100 };
const FIVE_MINUTES = 5 * 60_000;

let namespace: TestNamespace;
let controllers: ScheduleController[];
let errors: object[];
/** The controllers' clock: each test moves it; the API server's own clock only stamps creation. */
let clock: number;
/** The controllers' ServiceAccount of this test, made once. */
let account: Promise<KubeConfig> | undefined;

function logger(): ControllerLogger {
  return { error: (object, message) => errors.push({ ...object, message }), debug: () => undefined };
}

beforeEach(async () => {
  errors = [];
  controllers = [];
  account = undefined;
  namespace = await cluster.createNamespace({ prefix: 'schedules', waitForDefaultServiceAccount: true });
});

afterEach(async () => {
  await Promise.all(controllers.map((controller) => controller.stop()));
  await namespace.delete();
  // A reconcile that failed (a missing RBAC rule, a rejected write) is a failed test, whatever else held.
  expect(errors).toEqual([]);
});

/** A controller on the test clock, as a ServiceAccount with exactly SCHEDULE_CONTROLLER_RULES in the namespace. */
async function startController(metrics = new ScheduleMetrics()): Promise<{ controller: ScheduleController; metrics: ScheduleMetrics }> {
  const controller = new ScheduleController({
    kubeConfig: await (account ??= serviceAccountKubeConfig('schedule-controller')),
    namespace: namespace.name,
    logger: logger(),
    now: () => clock,
    metrics,
    // The test clock jumps: re-evaluate often instead of sleeping until a real instant.
    requeueCapMs: 200,
  });
  controllers.push(controller);
  await controller.start();
  return { controller, metrics };
}

async function stopController(controller: ScheduleController): Promise<void> {
  controllers = controllers.filter((c) => c !== controller);
  await controller.stop();
}

async function serviceAccountKubeConfig(name: string): Promise<KubeConfig> {
  return new NamespaceAccess(cluster, namespace.name).serviceAccountKubeConfig(name, SCHEDULE_CONTROLLER_RULES);
}

const custom = (plural: string) => ({ group: API_GROUP, version: API_VERSION, namespace: namespace.name, plural });

/** Creates a RunSchedule; the clock starts at its creation, and `first` is its first scheduled instant. */
async function createSchedule(name: string, spec: Partial<RunScheduleSpec> = {}): Promise<{ schedule: RunSchedule; first: number }> {
  const body: RunSchedule = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'RunSchedule',
    metadata: { name },
    spec: {
      schedule: '*/5 * * * *',
      runTemplate: { spec: { runtime: 'bash', source: { inline: 'sleep 3600' }, mode: { task: {} } } },
      ...spec,
    },
  };
  const schedule = (await objects.createNamespacedCustomObject({ ...custom(RUN_SCHEDULE_PLURAL), body })) as RunSchedule;
  const created = Date.parse(schedule.metadata.creationTimestamp ?? '');
  clock = created;
  return { schedule, first: Math.floor(created / FIVE_MINUTES) * FIVE_MINUTES + FIVE_MINUTES };
}

async function getSchedule(name: string): Promise<RunSchedule> {
  return (await objects.getNamespacedCustomObject({ ...custom(RUN_SCHEDULE_PLURAL), name })) as RunSchedule;
}

async function listRuns(): Promise<Run[]> {
  return ((await objects.listNamespacedCustomObject(custom(RUN_PLURAL))) as { items: Run[] }).items;
}

/** Waits for the schedule's status to satisfy `accept`, and returns it. */
async function statusWhere(name: string, what: string, accept: (schedule: RunSchedule) => boolean): Promise<RunSchedule> {
  return waitFor(
    `RunSchedule ${name}: ${what}`,
    async () => {
      const schedule = await getSchedule(name);
      return accept(schedule) ? schedule : undefined;
    },
    WAIT,
  );
}

/** Plays the scheduler and runtimed on a Run: each step a fenced status write through the state machine. */
async function act(name: string, steps: [WriterRole, RunEvent][]): Promise<void> {
  for (const [writer, event] of steps) {
    const run = (await objects.getNamespacedCustomObject({ ...custom(RUN_PLURAL), name })) as Run;
    const result = transition({ run, event, writer, now: rfc3339(Date.now()) });
    if (!result.ok) throw result.error;
    await objects.replaceNamespacedCustomObjectStatus({ ...custom(RUN_PLURAL), name, body: { ...run, status: result.status } });
  }
}

const startRunning: [WriterRole, RunEvent][] = [
  ['scheduler', { type: 'Bind', pod: 'pod-1', podUID: '00000000-0000-4000-8000-000000000001' }],
  ['runtimed', { type: 'Claim' }],
];
const succeed: [WriterRole, RunEvent][] = [['runtimed', { type: 'Succeeded' }]];

it('a controller down across 5 scheduled times creates exactly one catch-up Run, of the newest, and counts 4 missed', async () => {
  const { first } = await createSchedule('catch-up');
  const before = await startController();
  await statusWhere('catch-up', 'its first nextRunAt', (s) => s.status?.nextRunAt === rfc3339(first));
  await stopController(before.controller);

  // Down: five instants pass (first .. first + 20 min).
  clock = first + 4 * FIVE_MINUTES + 60_000;
  const after = await startController();
  const schedule = await statusWhere(
    'catch-up',
    'the newest instant acted on',
    (s) => s.status?.lastScheduledAt === rfc3339(first + 4 * FIVE_MINUTES),
  );

  const runs = await listRuns();
  expect(runs.map((run) => run.metadata.name)).toEqual([scheduledRunName('catch-up', first + 4 * FIVE_MINUTES)]);
  const run = runs[0]!;
  expect(run.metadata.annotations?.[SCHEDULE_ANNOTATIONS.scheduledAt]).toBe(rfc3339(first + 4 * FIVE_MINUTES));
  expect(run.metadata.labels?.[LABELS.schedule]).toBe('catch-up');
  expect(run.metadata.ownerReferences).toEqual([
    expect.objectContaining({
      kind: 'RunSchedule',
      name: 'catch-up',
      uid: schedule.metadata.uid,
      controller: true,
      blockOwnerDeletion: true,
    }),
  ]);
  expect(schedule.status).toMatchObject({
    missed: 4,
    skipped: 0,
    active: 1,
    lastRunRef: { name: run.metadata.name, uid: run.metadata.uid },
    nextRunAt: rfc3339(first + 5 * FIVE_MINUTES),
  });
  expect(after.metrics.render()).toContain(`kruntimes_schedule_runs_created_total{namespace="${namespace.name}",schedule="catch-up"} 1\n`);
  expect(after.metrics.render()).toContain(`kruntimes_schedule_missed_total{namespace="${namespace.name}",schedule="catch-up"} 4\n`);
});

it('two controller instances at once create one Run per scheduled time', async () => {
  const { first } = await createSchedule('racing', { overlapPolicy: 'Queue' });
  // The same metrics for both: a Run created by either counts once.
  const metrics = new ScheduleMetrics();
  await Promise.all([startController(metrics), startController(metrics)]);
  const expected: string[] = [];
  for (let i = 0; i < 3; i += 1) {
    const instant = first + i * FIVE_MINUTES;
    clock = instant + 1_000;
    expected.push(scheduledRunName('racing', instant));
    await statusWhere('racing', `instant ${String(i + 1)} acted on`, (s) => s.status?.lastScheduledAt === rfc3339(instant));
    // Finished at once, so that the next instant is created rather than queued.
    const name = expected.at(-1)!;
    await waitFor(`Run ${name}`, async () => (await listRuns()).find((run) => run.metadata.name === name), WAIT);
    await act(name, [...startRunning, ...succeed]);
    await statusWhere('racing', `Run ${name} no longer active`, (s) => s.status?.active === 0);
  }
  expect((await listRuns()).map((run) => run.metadata.name).sort()).toEqual([...expected].sort());
  expect(metrics.render()).toContain(`kruntimes_schedule_runs_created_total{namespace="${namespace.name}",schedule="racing"} 3\n`);
});

it('Skip: a scheduled time while a Run is running is skipped, and the next one after it finished runs', async () => {
  const { first } = await createSchedule('skipping', { overlapPolicy: 'Skip' });
  await startController();
  clock = first + 1_000;
  await statusWhere('skipping', 'the first Run', (s) => s.status?.lastScheduledAt === rfc3339(first));
  const running = scheduledRunName('skipping', first);
  await act(running, startRunning);

  clock = first + FIVE_MINUTES + 1_000;
  const skipped = await statusWhere('skipping', 'the second instant skipped', (s) => s.status?.skipped === 1);
  expect(skipped.status).toMatchObject({ lastScheduledAt: rfc3339(first + FIVE_MINUTES), active: 1, lastRunRef: { name: running } });
  expect((await listRuns()).map((run) => run.metadata.name)).toEqual([running]);

  await act(running, succeed);
  clock = first + 2 * FIVE_MINUTES + 1_000;
  await statusWhere('skipping', 'the third instant run', (s) => s.status?.lastScheduledAt === rfc3339(first + 2 * FIVE_MINUTES));
  expect((await listRuns()).map((run) => run.metadata.name).sort()).toEqual(
    [running, scheduledRunName('skipping', first + 2 * FIVE_MINUTES)].sort(),
  );
  expect((await getSchedule('skipping')).status?.skipped).toBe(1);
});

it('Queue: one scheduled time waits behind a running Run (a later one is skipped) and runs as soon as it finished', async () => {
  const { first } = await createSchedule('queueing', { overlapPolicy: 'Queue' });
  await startController();
  clock = first + 1_000;
  await statusWhere('queueing', 'the first Run', (s) => s.status?.lastScheduledAt === rfc3339(first));
  const running = scheduledRunName('queueing', first);
  await act(running, startRunning);

  clock = first + FIVE_MINUTES + 1_000;
  await statusWhere('queueing', 'the second instant queued', (s) => s.status?.queuedAt === rfc3339(first + FIVE_MINUTES));
  clock = first + 2 * FIVE_MINUTES + 1_000;
  const held = await statusWhere('queueing', 'the third instant skipped', (s) => s.status?.skipped === 1);
  expect(held.status?.queuedAt).toBe(rfc3339(first + FIVE_MINUTES));
  expect((await listRuns()).map((run) => run.metadata.name)).toEqual([running]);

  // Finished: the held instant runs now, with the clock where it is.
  await act(running, succeed);
  const released = await statusWhere('queueing', 'the queue released', (s) => s.status?.queuedAt === undefined && s.status?.active === 1);
  const queued = scheduledRunName('queueing', first + FIVE_MINUTES);
  expect(released.status?.lastRunRef?.name).toBe(queued);
  expect((await listRuns()).map((run) => run.metadata.name).sort()).toEqual([running, queued].sort());
});

it('deleting a schedule garbage-collects its Runs through their owner references', async () => {
  const { first } = await createSchedule('collected');
  await startController();
  clock = first + 1_000;
  await statusWhere('collected', 'its Run', (s) => s.status?.active === 1);
  expect(await listRuns()).toHaveLength(1);

  await objects.deleteNamespacedCustomObject({ ...custom(RUN_SCHEDULE_PLURAL), name: 'collected' });
  // kube-controller-manager's garbage collector, not the schedule controller, deletes the Run.
  await waitFor('the Run collected', async () => ((await listRuns()).length === 0 ? true : undefined), {
    timeoutMs: 60_000,
    intervalMs: 200,
  });
});

it('the API server refuses a malformed schedule, a time zone outside its zone database, and a name too long for its Run names', async () => {
  const refusal = async (name: string, spec: Partial<RunScheduleSpec>): Promise<string> => {
    try {
      await createSchedule(name, spec);
    } catch (error) {
      if (error instanceof ApiException && error.code === 422) return String(error.body);
      throw error;
    }
    throw new Error(`RunSchedule ${name} was accepted`);
  };
  expect(await refusal('shape', { schedule: '*/5 * * *' })).toContain('schedule must be five cron fields');
  expect(await refusal('offset', { timeZone: '+01:00' })).toContain('timeZone must be an IANA time zone name');
  expect(await refusal('unknown-zone', { timeZone: 'Mars/Olympus_Mons' })).toContain('spec.timeZone');
  expect(await refusal('x'.repeat(53), {})).toContain('at most 52 characters');
  expect(await refusal('policy', { overlapPolicy: 'Replace' as 'Skip' })).toContain('spec.overlapPolicy');
});

it('a schedule the shape check lets through but the parser refuses gets Scheduling=False with the field named, and no Run', async () => {
  await createSchedule('bad-minute', { schedule: '61 * * * *', timeZone: 'Europe/Berlin' });
  await startController();
  const schedule = await statusWhere('bad-minute', 'a Scheduling condition', (s) => s.status?.conditions?.[0] !== undefined);
  expect(schedule.status?.conditions?.[0]).toMatchObject({
    type: 'Scheduling',
    status: 'False',
    reason: 'InvalidSchedule',
    message: 'invalid schedule "61 * * * *": minute field "61": 61 is out of range 0-59',
  });
  expect(await listRuns()).toEqual([]);
});
