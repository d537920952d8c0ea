import type { OverlapPolicy } from '@kruntimes/api';
import { parseCron } from './cron.ts';
import { dueTimes, nextScheduledTime, timeZoneProblem } from './zoned-time.ts';

/** Scheduled times counted per decision at most (a schedule every minute down for a year). */
export const MISSED_COUNT_LIMIT = 1000;

/** What the decision reads of a RunSchedule (spec and the status it wrote before). */
export interface ScheduleView {
  schedule: string;
  timeZone: string;
  overlapPolicy: OverlapPolicy;
  suspend: boolean;
  startingDeadlineSeconds: number | undefined;
  /** The schedule's creation: times before it are never due. */
  createdAt: number;
  lastScheduledAt: number | undefined;
  queuedAt: number | undefined;
}

/** What the decision reads of each Run the schedule owns (scheduled or manual). */
export interface ScheduleRunView {
  name: string;
  /** The instant it was scheduled for; undefined for a manual Run. */
  scheduledAt: number | undefined;
  /** Not finished (run-state's isActive), including a Run just created and not yet seen by the cache. */
  active: boolean;
}

export interface ScheduleProblem {
  reason: 'InvalidSchedule' | 'InvalidTimeZone';
  message: string;
}

export interface ScheduleDecision {
  /** The schedule cannot be evaluated; nothing else is decided. */
  problem?: ScheduleProblem;
  /** Create the Run of this scheduled instant (`fromQueue`: it waited behind an active Run). */
  create?: { scheduledAt: number; fromQueue: boolean };
  /** This scheduled instant is not run: a Run was active (Skip, or Queue already holding one). */
  skip?: number;
  /** Scheduled instants that passed with nothing to run them (downtime, suspend, past the starting deadline). */
  missed: number;
  /** What status.lastScheduledAt and status.queuedAt become. */
  lastScheduledAt: number | undefined;
  queuedAt: number | undefined;
  nextRunAt: number | undefined;
  /** Reconcile again then: the next scheduled instant (undefined: only a change of the schedule matters). */
  requeueAfterMs: number | undefined;
}

/**
 * What a RunSchedule does at `now`. The due instants are those after the newest one
 * already acted on (status.lastScheduledAt, or the newest Run's annotation if that write
 * was lost), up to `now`: only the newest of them can be run (at most one catch-up), and
 * only within startingDeadlineSeconds; the older ones are missed. While a Run of the
 * schedule is active, `Skip` skips the instant and `Queue` holds one (later ones skip).
 * A held instant runs as soon as nothing is active, before any newer one is considered.
 */
export function decideSchedule(now: number, schedule: ScheduleView, runs: readonly ScheduleRunView[]): ScheduleDecision {
  const kept = { missed: 0, lastScheduledAt: schedule.lastScheduledAt, queuedAt: schedule.queuedAt };
  const cron = parseCron(schedule.schedule);
  if (!cron.ok)
    return { ...kept, problem: { reason: 'InvalidSchedule', message: cron.message }, nextRunAt: undefined, requeueAfterMs: undefined };
  const zoneProblem = timeZoneProblem(schedule.timeZone);
  if (zoneProblem !== undefined)
    return { ...kept, problem: { reason: 'InvalidTimeZone', message: zoneProblem }, nextRunAt: undefined, requeueAfterMs: undefined };

  const nextRunAt = nextScheduledTime(cron.cron, schedule.timeZone, now);
  const waitForNext = { nextRunAt, requeueAfterMs: nextRunAt === undefined ? undefined : Math.max(0, nextRunAt - now) };
  // Suspended: nothing runs and nothing is used up; on resume the usual catch-up rules apply.
  if (schedule.suspend) return { ...kept, ...waitForNext, requeueAfterMs: undefined };

  const active = runs.some((run) => run.active);
  if (schedule.queuedAt !== undefined && !active) {
    const alreadyCreated = runs.some((run) => run.scheduledAt === schedule.queuedAt);
    return {
      ...kept,
      ...(alreadyCreated ? {} : { create: { scheduledAt: schedule.queuedAt, fromQueue: true } }),
      queuedAt: undefined,
      // Newer due instants are decided next, once the cache shows this Run active.
      nextRunAt,
      requeueAfterMs: 0,
    };
  }

  const newestRun = Math.max(...runs.map((run) => run.scheduledAt ?? Number.NEGATIVE_INFINITY));
  const acted = Math.max(schedule.lastScheduledAt ?? Number.NEGATIVE_INFINITY, newestRun);
  const since = Number.isFinite(acted) ? acted : schedule.createdAt;
  const due = dueTimes(cron.cron, schedule.timeZone, since, now, MISSED_COUNT_LIMIT);
  if (due.newest === undefined) return { ...kept, lastScheduledAt: Number.isFinite(acted) ? acted : undefined, ...waitForNext };

  const newest = due.newest;
  const olderMissed = due.count - 1;
  const moved = { lastScheduledAt: newest, ...waitForNext };
  const deadlineMs = schedule.startingDeadlineSeconds === undefined ? undefined : schedule.startingDeadlineSeconds * 1000;
  if (deadlineMs !== undefined && now - newest > deadlineMs) return { ...kept, ...moved, missed: due.count };
  if (!active) return { ...kept, ...moved, missed: olderMissed, create: { scheduledAt: newest, fromQueue: false } };
  switch (schedule.overlapPolicy) {
    case 'Skip':
      return { ...kept, ...moved, missed: olderMissed, skip: newest };
    case 'Queue':
      return schedule.queuedAt === undefined
        ? { ...kept, ...moved, missed: olderMissed, queuedAt: newest }
        : { ...kept, ...moved, missed: olderMissed, skip: newest };
  }
}
