import { SCHEDULE_DEFAULTS } from '@kruntimes/api';
import type { Run, RunSchedule } from '@kruntimes/api';
import { currentPhase, isActive, isSuccessful } from '@kruntimes/run-state';
import type { ScheduleRunView, ScheduleView } from './decide-schedule.ts';
import type { FinishedScheduleRun, HistoryLimits } from './history.ts';
import { scheduledAtOf } from './run-naming.ts';

/** The decision's view of a RunSchedule, defaults applied (as the CRD schema would). */
export function scheduleView(schedule: RunSchedule): ScheduleView {
  const { spec, status } = schedule;
  return {
    schedule: spec.schedule,
    timeZone: spec.timeZone ?? SCHEDULE_DEFAULTS.timeZone,
    overlapPolicy: spec.overlapPolicy ?? SCHEDULE_DEFAULTS.overlapPolicy,
    suspend: spec.suspend === true,
    startingDeadlineSeconds: spec.startingDeadlineSeconds,
    createdAt: instant(schedule.metadata.creationTimestamp) ?? 0,
    lastScheduledAt: instant(status?.lastScheduledAt),
    queuedAt: instant(status?.queuedAt),
  };
}

export function historyLimits(schedule: RunSchedule): HistoryLimits {
  return {
    successfulRunsHistoryLimit: schedule.spec.successfulRunsHistoryLimit ?? SCHEDULE_DEFAULTS.successfulRunsHistoryLimit,
    failedRunsHistoryLimit: schedule.spec.failedRunsHistoryLimit ?? SCHEDULE_DEFAULTS.failedRunsHistoryLimit,
  };
}

/** The decision's view of one owned Run; what it means to be active is run-state's to say. */
export function scheduleRunView(run: Run): ScheduleRunView {
  return { name: run.metadata.name ?? '', scheduledAt: scheduledAtOf(run.metadata.annotations), active: isActive(currentPhase(run)) };
}

/** An owned Run as history pruning sees it, or undefined while it is active or already being deleted. */
export function finishedScheduleRun(run: Run): FinishedScheduleRun | undefined {
  const phase = currentPhase(run);
  if (isActive(phase) || run.metadata.deletionTimestamp !== undefined) return undefined;
  return {
    name: run.metadata.name ?? '',
    uid: run.metadata.uid ?? '',
    resourceVersion: run.metadata.resourceVersion ?? '',
    succeeded: isSuccessful(phase),
    finishedAt: instant(run.status?.completionTime) ?? instant(run.metadata.creationTimestamp) ?? 0,
  };
}

function instant(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : ms;
}
