import { NO_AUTHZ_METRICS } from '@kruntimes/authz';
import type { AuthzMetrics } from '@kruntimes/authz';
import { NO_FUNCTION_METRICS } from './function-metrics.ts';
import type { FunctionInvocationHooks } from './function-metrics.ts';

/** Outcomes of one RegisterFunction by runtimed. */
export type RegistrationOutcome = 'registered' | 'reused' | 'failed' | 'indeterminate';
export type TaskOutcome = 'succeeded' | 'failed' | 'timeout' | 'cancelled' | 'released' | 'waiting_input' | 'drain_window_exceeded';

/** One FunctionRuntime call as it ended: on which port, where it went, with which code ('OK' on success). */
export interface InvocationOutcome {
  port: 'grpc' | 'peer';
  route: 'local' | 'forwarded' | 'refused';
  code: string;
}

/**
 * What runtimed counts: registrations by outcome, active functions, task
 * durations, status-write conflicts, lease renewals. An interface so that the logic
 * does not depend on the exporter; `otel-metrics.ts` implements it.
 */
export interface RuntimedMetrics {
  registration(outcome: RegistrationOutcome): void;
  taskFinished(outcome: TaskOutcome, durationSeconds: number): void;
  statusConflict(): void;
  leaseRenewal(ok: boolean): void;
  invocation(outcome: InvocationOutcome): void;
  /** Hooks of the dataplane's AccessReviewer (exported under AUTHZ_METRIC_NAMES). */
  authz: AuthzMetrics;
  /** Called at collection time for the number of functions registered by this Pod. */
  observeActiveFunctions(count: () => number): void;
  /** Per-function Run invocation metrics of the owner (function-metrics.ts). */
  functions: FunctionInvocationHooks;
}

export const NO_METRICS: RuntimedMetrics = {
  registration: () => undefined,
  taskFinished: () => undefined,
  statusConflict: () => undefined,
  leaseRenewal: () => undefined,
  invocation: () => undefined,
  authz: NO_AUTHZ_METRICS,
  observeActiveFunctions: () => undefined,
  functions: NO_FUNCTION_METRICS,
};
