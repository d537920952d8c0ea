import { MISSED_COUNT_LIMIT, decideSchedule } from './decide-schedule.ts';
import type { ScheduleDecision, ScheduleRunView, ScheduleView } from './decide-schedule.ts';

const at = (iso: string): number => Date.parse(iso);
const MIN = 60_000;

/** Every 5 minutes in UTC, created at 10:00, nothing acted on yet. */
const base: ScheduleView = {
  schedule: '*/5 * * * *',
  timeZone: 'UTC',
  overlapPolicy: 'Skip',
  suspend: false,
  startingDeadlineSeconds: undefined,
  createdAt: at('2026-06-01T10:00:00Z'),
  lastScheduledAt: undefined,
  queuedAt: undefined,
};

const activeRun: ScheduleRunView = { name: 'nightly-aaaa', scheduledAt: at('2026-06-01T10:05:00Z'), active: true };
const finishedRun: ScheduleRunView = { ...activeRun, active: false };
const activeManual: ScheduleRunView = { name: 'nightly-m-bbbb', scheduledAt: undefined, active: true };

/** The decision with instants as ISO strings, so that the table reads as times. */
function readable(decision: ScheduleDecision): Record<string, unknown> {
  const iso = (ms: number | undefined): string | undefined =>
    ms === undefined ? undefined : new Date(ms).toISOString().replace('.000Z', 'Z');
  return {
    ...(decision.problem === undefined ? {} : { problem: decision.problem.reason }),
    ...(decision.create === undefined ? {} : { create: iso(decision.create.scheduledAt), fromQueue: decision.create.fromQueue }),
    ...(decision.skip === undefined ? {} : { skip: iso(decision.skip) }),
    missed: decision.missed,
    lastScheduledAt: iso(decision.lastScheduledAt),
    queuedAt: iso(decision.queuedAt),
    nextRunAt: iso(decision.nextRunAt),
    requeueAfterMs: decision.requeueAfterMs,
  };
}

// [what, now, schedule changes, runs, expected decision]
const table: [string, string, Partial<ScheduleView>, ScheduleRunView[], Record<string, unknown>][] = [
  [
    'invalid schedule: only the problem',
    '2026-06-01T10:07:00Z',
    { schedule: '*/5 * * *' },
    [],
    {
      problem: 'InvalidSchedule',
      missed: 0,
      lastScheduledAt: undefined,
      queuedAt: undefined,
      nextRunAt: undefined,
      requeueAfterMs: undefined,
    },
  ],
  [
    'unknown time zone: only the problem',
    '2026-06-01T10:07:00Z',
    { timeZone: 'Mars/Olympus_Mons' },
    [],
    {
      problem: 'InvalidTimeZone',
      missed: 0,
      lastScheduledAt: undefined,
      queuedAt: undefined,
      nextRunAt: undefined,
      requeueAfterMs: undefined,
    },
  ],
  [
    'nothing due yet: wait for the first instant',
    '2026-06-01T10:03:00Z',
    {},
    [],
    { missed: 0, lastScheduledAt: undefined, queuedAt: undefined, nextRunAt: '2026-06-01T10:05:00Z', requeueAfterMs: 2 * MIN },
  ],
  [
    'one instant due: create it',
    '2026-06-01T10:05:00Z',
    {},
    [],
    {
      create: '2026-06-01T10:05:00Z',
      fromQueue: false,
      missed: 0,
      lastScheduledAt: '2026-06-01T10:05:00Z',
      queuedAt: undefined,
      nextRunAt: '2026-06-01T10:10:00Z',
      requeueAfterMs: 5 * MIN,
    },
  ],
  [
    'down across 5 instants: one catch-up Run of the newest, 4 missed',
    '2026-06-01T10:27:00Z',
    {},
    [],
    {
      create: '2026-06-01T10:25:00Z',
      fromQueue: false,
      missed: 4,
      lastScheduledAt: '2026-06-01T10:25:00Z',
      queuedAt: undefined,
      nextRunAt: '2026-06-01T10:30:00Z',
      requeueAfterMs: 3 * MIN,
    },
  ],
  [
    'down across 5 instants, the newest past the starting deadline: all 5 missed',
    '2026-06-01T10:27:00Z',
    { startingDeadlineSeconds: 60 },
    [],
    { missed: 5, lastScheduledAt: '2026-06-01T10:25:00Z', queuedAt: undefined, nextRunAt: '2026-06-01T10:30:00Z', requeueAfterMs: 3 * MIN },
  ],
  [
    'the newest within the starting deadline: created late',
    '2026-06-01T10:27:00Z',
    { startingDeadlineSeconds: 120 },
    [],
    {
      create: '2026-06-01T10:25:00Z',
      fromQueue: false,
      missed: 4,
      lastScheduledAt: '2026-06-01T10:25:00Z',
      queuedAt: undefined,
      nextRunAt: '2026-06-01T10:30:00Z',
      requeueAfterMs: 3 * MIN,
    },
  ],
  [
    'already acted on (status): nothing again',
    '2026-06-01T10:07:00Z',
    { lastScheduledAt: at('2026-06-01T10:05:00Z') },
    [],
    { missed: 0, lastScheduledAt: '2026-06-01T10:05:00Z', queuedAt: undefined, nextRunAt: '2026-06-01T10:10:00Z', requeueAfterMs: 3 * MIN },
  ],
  [
    'the status write was lost but the Run exists: its annotation is the cursor',
    '2026-06-01T10:07:00Z',
    {},
    [finishedRun],
    { missed: 0, lastScheduledAt: '2026-06-01T10:05:00Z', queuedAt: undefined, nextRunAt: '2026-06-01T10:10:00Z', requeueAfterMs: 3 * MIN },
  ],
  [
    'Skip with a Run active: the instant is skipped',
    '2026-06-01T10:10:00Z',
    { lastScheduledAt: at('2026-06-01T10:05:00Z') },
    [activeRun],
    {
      skip: '2026-06-01T10:10:00Z',
      missed: 0,
      lastScheduledAt: '2026-06-01T10:10:00Z',
      queuedAt: undefined,
      nextRunAt: '2026-06-01T10:15:00Z',
      requeueAfterMs: 5 * MIN,
    },
  ],
  [
    'Skip with a manual Run active: skipped too',
    '2026-06-01T10:05:00Z',
    {},
    [activeManual],
    {
      skip: '2026-06-01T10:05:00Z',
      missed: 0,
      lastScheduledAt: '2026-06-01T10:05:00Z',
      queuedAt: undefined,
      nextRunAt: '2026-06-01T10:10:00Z',
      requeueAfterMs: 5 * MIN,
    },
  ],
  [
    'Skip after downtime with a Run active: the newest skipped, the older missed',
    '2026-06-01T10:20:00Z',
    { lastScheduledAt: at('2026-06-01T10:05:00Z') },
    [activeRun],
    {
      skip: '2026-06-01T10:20:00Z',
      missed: 2,
      lastScheduledAt: '2026-06-01T10:20:00Z',
      queuedAt: undefined,
      nextRunAt: '2026-06-01T10:25:00Z',
      requeueAfterMs: 5 * MIN,
    },
  ],
  [
    'Queue with a Run active: the instant is held',
    '2026-06-01T10:10:00Z',
    { overlapPolicy: 'Queue', lastScheduledAt: at('2026-06-01T10:05:00Z') },
    [activeRun],
    {
      missed: 0,
      lastScheduledAt: '2026-06-01T10:10:00Z',
      queuedAt: '2026-06-01T10:10:00Z',
      nextRunAt: '2026-06-01T10:15:00Z',
      requeueAfterMs: 5 * MIN,
    },
  ],
  [
    'Queue already holding one: the next instant is skipped',
    '2026-06-01T10:15:00Z',
    { overlapPolicy: 'Queue', lastScheduledAt: at('2026-06-01T10:10:00Z'), queuedAt: at('2026-06-01T10:10:00Z') },
    [activeRun],
    {
      skip: '2026-06-01T10:15:00Z',
      missed: 0,
      lastScheduledAt: '2026-06-01T10:15:00Z',
      queuedAt: '2026-06-01T10:10:00Z',
      nextRunAt: '2026-06-01T10:20:00Z',
      requeueAfterMs: 5 * MIN,
    },
  ],
  [
    'Queue holding one, nothing active any more: create the held instant first',
    '2026-06-01T10:17:00Z',
    { overlapPolicy: 'Queue', lastScheduledAt: at('2026-06-01T10:15:00Z'), queuedAt: at('2026-06-01T10:10:00Z') },
    [finishedRun],
    {
      create: '2026-06-01T10:10:00Z',
      fromQueue: true,
      missed: 0,
      lastScheduledAt: '2026-06-01T10:15:00Z',
      queuedAt: undefined,
      nextRunAt: '2026-06-01T10:20:00Z',
      requeueAfterMs: 0,
    },
  ],
  [
    'Queue holding one whose Run exists already (status write lost): only the hold is released',
    '2026-06-01T10:17:00Z',
    { overlapPolicy: 'Queue', lastScheduledAt: at('2026-06-01T10:15:00Z'), queuedAt: at('2026-06-01T10:10:00Z') },
    [{ name: 'nightly-cccc', scheduledAt: at('2026-06-01T10:10:00Z'), active: false }],
    { missed: 0, lastScheduledAt: '2026-06-01T10:15:00Z', queuedAt: undefined, nextRunAt: '2026-06-01T10:20:00Z', requeueAfterMs: 0 },
  ],
  [
    'suspended: nothing created, nothing used up, no requeue',
    '2026-06-01T10:27:00Z',
    { suspend: true },
    [],
    { missed: 0, lastScheduledAt: undefined, queuedAt: undefined, nextRunAt: '2026-06-01T10:30:00Z', requeueAfterMs: undefined },
  ],
  [
    'a schedule that never fires again (29 February 2100 is no date): no next instant',
    '2096-03-01T00:00:00Z',
    { schedule: '0 0 29 2 *', createdAt: at('2096-03-01T00:00:00Z') },
    [],
    {
      missed: 0,
      lastScheduledAt: undefined,
      queuedAt: undefined,
      nextRunAt: '2104-02-29T00:00:00Z',
      requeueAfterMs: at('2104-02-29T00:00:00Z') - at('2096-03-01T00:00:00Z'),
    },
  ],
  [
    'times before the schedule was created are never due',
    '2026-06-01T10:04:00Z',
    { createdAt: at('2026-06-01T10:02:00Z'), schedule: '* * * * *' },
    [],
    {
      create: '2026-06-01T10:04:00Z',
      fromQueue: false,
      missed: 1,
      lastScheduledAt: '2026-06-01T10:04:00Z',
      queuedAt: undefined,
      nextRunAt: '2026-06-01T10:05:00Z',
      requeueAfterMs: MIN,
    },
  ],
];

describe('decideSchedule', () => {
  it.each(table)('%s', (_what, now, changes, runs, expected) => {
    expect(readable(decideSchedule(at(now), { ...base, ...changes }, runs))).toEqual(expected);
  });

  it('counts missed instants up to a bound, and still creates the newest', () => {
    const decision = decideSchedule(at('2027-06-01T10:00:30Z'), { ...base, schedule: '* * * * *' }, []);
    expect(decision.missed).toBe(MISSED_COUNT_LIMIT - 1);
    expect(decision.create?.scheduledAt).toBe(at('2027-06-01T10:00:00Z'));
  });

  it('follows the zone: 02:30 Berlin on the spring-forward day is not due', () => {
    const berlin = { ...base, schedule: '30 2 * * *', timeZone: 'Europe/Berlin', createdAt: at('2026-03-28T12:00:00Z') };
    expect(decideSchedule(at('2026-03-29T06:00:00Z'), berlin, []).create).toBeUndefined();
    expect(decideSchedule(at('2026-03-30T06:00:00Z'), berlin, []).create?.scheduledAt).toBe(at('2026-03-30T00:30:00Z'));
  });
});
