import { SCHEDULE_CONDITION_TYPES, SCHEDULE_REASONS } from '@kruntimes/api';
import type { RunScheduleStatus, ScheduleReason } from '@kruntimes/api';
import { setCondition } from '@kruntimes/run-state';
import type { ScheduleDecision } from './decide-schedule.ts';
import { rfc3339 } from './run-naming.ts';

export interface ScheduleStatusInput {
  previous: RunScheduleStatus | undefined;
  generation: number | undefined;
  suspend: boolean;
  decision: ScheduleDecision;
  /** A problem found while acting (a Run name taken by another object), else the decision's. */
  problem: { reason: ScheduleReason; message: string } | undefined;
  /** Runs of the schedule not finished, after acting on the decision. */
  active: number;
  /** The Run just created, if any. */
  created: { name: string; uid?: string } | undefined;
  now: number;
}

/**
 * The RunSchedule status after one reconcile: the decision's instants, counters grown by
 * what this decision skipped and missed, and the `Scheduling` condition (True while Runs
 * are created; False when suspended or when the schedule or time zone is invalid).
 */
export function scheduleStatus(input: ScheduleStatusInput): RunScheduleStatus {
  const { previous, decision, problem } = input;
  const condition =
    problem !== undefined
      ? { status: 'False' as const, reason: problem.reason, message: problem.message }
      : input.suspend
        ? { status: 'False' as const, reason: SCHEDULE_REASONS.suspended, message: 'spec.suspend is true: no Runs are created' }
        : { status: 'True' as const, reason: SCHEDULE_REASONS.active, message: 'Runs are created at the scheduled times' };
  const lastRunRef = input.created ?? previous?.lastRunRef;
  const status: RunScheduleStatus = {
    ...(input.generation === undefined ? {} : { observedGeneration: input.generation }),
    ...(decision.nextRunAt === undefined ? {} : { nextRunAt: rfc3339(decision.nextRunAt) }),
    ...(decision.lastScheduledAt === undefined ? {} : { lastScheduledAt: rfc3339(decision.lastScheduledAt) }),
    ...(lastRunRef === undefined ? {} : { lastRunRef: { ...lastRunRef } }),
    active: input.active,
    ...(decision.queuedAt === undefined ? {} : { queuedAt: rfc3339(decision.queuedAt) }),
    skipped: (previous?.skipped ?? 0) + (decision.skip === undefined ? 0 : 1),
    missed: (previous?.missed ?? 0) + decision.missed,
    conditions: setCondition(
      previous?.conditions,
      { type: SCHEDULE_CONDITION_TYPES.scheduling, ...condition },
      rfc3339(input.now),
      input.generation,
    ),
  };
  return status;
}
