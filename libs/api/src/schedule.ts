import type { Condition, ObjectMeta, RunSpec } from './types.ts';

export const RUN_SCHEDULE_KIND = 'RunSchedule';
export const RUN_SCHEDULE_PLURAL = 'runschedules';
export const RUN_SCHEDULE_SINGULAR = 'runschedule';
export const RUN_SCHEDULE_SHORT_NAMES = ['krs'] as const;

export const OVERLAP_POLICIES = ['Skip', 'Queue'] as const;
/** What a scheduled time does while a Run of the schedule is still active. */
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

/**
 * Annotations on the Runs a RunSchedule creates. `scheduledAt` is the UTC instant the Run
 * was scheduled for (RFC 3339, seconds); a manual Run carries `triggerId` instead.
 */
export const SCHEDULE_ANNOTATIONS = {
  scheduledAt: 'kruntimes.io/scheduled-at',
  triggerId: 'kruntimes.io/trigger-id',
} as const;

/** The condition type of a RunSchedule: its schedule and time zone are usable. */
export const SCHEDULE_CONDITION_TYPES = { scheduling: 'Scheduling' } as const;

export const SCHEDULE_REASONS = {
  active: 'Active',
  suspended: 'Suspended',
  invalidSchedule: 'InvalidSchedule',
  invalidTimeZone: 'InvalidTimeZone',
  runNameTaken: 'RunNameTaken',
} as const;

export type ScheduleReason = (typeof SCHEDULE_REASONS)[keyof typeof SCHEDULE_REASONS];

/** What a scheduled Run is made of: labels and annotations copied onto it, and its spec. */
export interface RunTemplate {
  metadata?: Pick<ObjectMeta, 'labels' | 'annotations'>;
  spec: Omit<RunSpec, 'cancelRequested' | 'parentRunRef' | 'creator'>;
}

export interface RunScheduleSpec {
  /** Five-field cron (minute hour day-of-month month day-of-week), or @hourly, @daily, ... */
  schedule: string;
  /** IANA time zone the cron fields are read in; UTC when absent. */
  timeZone?: string;
  overlapPolicy?: OverlapPolicy;
  runTemplate: RunTemplate;
  suspend?: boolean;
  /** A scheduled time not started within this many seconds is missed, not run late. */
  startingDeadlineSeconds?: number;
  successfulRunsHistoryLimit?: number;
  failedRunsHistoryLimit?: number;
}

export interface RunScheduleStatus {
  observedGeneration?: number;
  /** The next scheduled UTC instant (RFC 3339). */
  nextRunAt?: string;
  /** The newest scheduled instant acted on: a Run created, queued or skipped for it. */
  lastScheduledAt?: string;
  lastRunRef?: { name: string; uid?: string };
  /** How many Runs of the schedule are not finished (the ACTIVE column). */
  active?: number;
  /** With overlapPolicy Queue: the scheduled instant held until the active Run finishes. */
  queuedAt?: string;
  /** Scheduled times not run because a Run was active (Skip, or Queue already holding one). */
  skipped?: number;
  /** Scheduled times not run because they passed while nothing ran them (downtime, suspend, deadline). */
  missed?: number;
  conditions?: Condition[];
}

export interface RunSchedule {
  apiVersion: 'kruntimes.io/v1alpha1';
  kind: 'RunSchedule';
  metadata: ObjectMeta;
  spec: RunScheduleSpec;
  status?: RunScheduleStatus;
}

export const SCHEDULE_DEFAULTS = {
  timeZone: 'UTC',
  overlapPolicy: 'Skip',
  successfulRunsHistoryLimit: 3,
  failedRunsHistoryLimit: 1,
} as const satisfies Partial<RunScheduleSpec>;

export const SCHEDULE_BOUNDS = {
  /** spec.schedule, bytes. */
  scheduleBytes: 128,
  /** spec.timeZone, bytes (the longest IANA name is 30). */
  timeZoneBytes: 64,
  historyLimit: 100,
  /** RunSchedule names leave room for the Run name suffix (`-` and 10 characters). */
  nameBytes: 52,
  /** krt schedule trigger --id, bytes of visible ASCII. */
  triggerIdBytes: 128,
} as const;

/** An IANA zone name as the database spells it (`Area/Location`, `UTC`), not an offset like `+01:00`. */
export const TIME_ZONE_PATTERN = '^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$';

/** Five fields of cron characters, or a macro: the shape only (the controller's parser names a wrong value). */
export const SCHEDULE_SHAPE_PATTERN = '^(@[a-z]+|[0-9A-Za-z*/,-]+([ \\t]+[0-9A-Za-z*/,-]+){4})$';
