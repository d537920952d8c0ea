/** Outcomes of one RegisterFunction by runtimed. */
export type RegistrationOutcome = 'registered' | 'reused' | 'failed' | 'indeterminate';
export type TaskOutcome = 'succeeded' | 'failed' | 'timeout' | 'cancelled' | 'released';

/**
 * What runtimed counts (issue 6): registrations by outcome, active functions, task
 * durations, status-write conflicts, lease renewals. An interface so that the logic
 * does not depend on the exporter; `otel-metrics.ts` implements it.
 */
export interface RuntimedMetrics {
  registration(outcome: RegistrationOutcome): void;
  taskFinished(outcome: TaskOutcome, durationSeconds: number): void;
  statusConflict(): void;
  leaseRenewal(ok: boolean): void;
  /** Called at collection time for the number of functions registered by this Pod. */
  observeActiveFunctions(count: () => number): void;
}

export const NO_METRICS: RuntimedMetrics = {
  registration: () => undefined,
  taskFinished: () => undefined,
  statusConflict: () => undefined,
  leaseRenewal: () => undefined,
  observeActiveFunctions: () => undefined,
};
