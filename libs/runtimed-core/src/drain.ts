import { RUN_REASONS } from '@kruntimes/api';
import type { RunAction } from './plan.ts';

/**
 * The drain of a Runtime Pod told to stop (docs/operations.md "Drain"): pure decisions,
 * the reconciler does the I/O. No claim is taken once the Pod is stopping or marked for
 * scale-down; function Runs are handed over (in-flight invocations first); tasks run on
 * until the drain window ends, then are stopped like a cancel.
 */

/** What runtimed knows of its own Pod's stop. */
export interface PodStop {
  /** SIGTERM came, or the Pod has a deletionTimestamp. */
  stopping: boolean;
  /** The controller-manager's autoscaler marked the Pod for removal (POD_ANNOTATIONS.scaleDown). */
  scaleDown: boolean;
}

export type ClaimGate = { open: true } | { open: false; reason: typeof RUN_REASONS.podDraining; message: string };

/** Whether this Pod takes a claim now; a closed gate gives the Run back at the same attempt (RefuseClaim). */
export function claimGate(pod: PodStop, podName: string): ClaimGate {
  if (pod.stopping) {
    return { open: false, reason: RUN_REASONS.podDraining, message: `Pod ${podName} is stopping; the Run goes back to be scheduled` };
  }
  if (pod.scaleDown) {
    return {
      open: false,
      reason: RUN_REASONS.podDraining,
      message: `Pod ${podName} is marked for scale-down; the Run goes back to be scheduled`,
    };
  }
  return { open: true };
}

/** The drain in progress: since when, and when its window ends (both on the process's clock). */
export interface Drain {
  sinceMs: number;
  deadlineMs: number;
}

/** How soon a handover waiting for in-flight invocations looks again. */
export const IN_FLIGHT_RECHECK_MS = 100;

export interface DrainStepInput {
  /** What planRun decided without the drain. */
  action: RunAction['type'];
  drain: Drain | undefined;
  nowMs: number;
  /** Invocations of this epoch in flight (the dataplane's own count and the Runtime Server's). */
  inFlight: number;
  /** When this epoch stopped taking invocations (its handover began); undefined before. */
  movingSinceMs: number | undefined;
  /** The Run's mode.function.invocationTimeoutSeconds in ms: how long an in-flight invocation may still take. */
  invocationTimeoutMs: number;
  /** A task execution of this epoch runs here. */
  executing: boolean;
}

export type DrainStep =
  /** Not draining, or the drain does not change this step: planRun's action goes ahead. */
  | { type: 'asPlanned' }
  /** A function Run: no new invocation is taken; wait for those in flight, then look again. */
  | { type: 'waitInFlight'; requeueAfterMs: number }
  /** A function Run: unregister, report the release in the Lease, then HandOver. */
  | { type: 'handOver'; why: string }
  /** A task still running when the window ended: stop it (SIGTERM, grace, SIGKILL) and write its end. */
  | { type: 'stopTask' };

/**
 * One Run's step while its Pod drains. A function Run is handed over at once (a planned
 * move; its in-flight invocations finish first, each within its timeout); a task keeps
 * running within the window. Cancel, lifetime timeout and deletion keep their own steps.
 */
export function decideDrainStep(input: DrainStepInput): DrainStep {
  const { action, drain, nowMs } = input;
  if (drain === undefined) return { type: 'asPlanned' };
  switch (action) {
    case 'register':
    case 'watch': {
      const waitedMs = input.movingSinceMs === undefined ? 0 : nowMs - input.movingSinceMs;
      if (input.inFlight > 0 && waitedMs < input.invocationTimeoutMs) return { type: 'waitInFlight', requeueAfterMs: IN_FLIGHT_RECHECK_MS };
      return {
        type: 'handOver',
        why: input.inFlight > 0 ? 'an invocation outlived its timeout' : 'no invocation in flight',
      };
    }
    case 'execute':
      return input.executing && nowMs >= drain.deadlineMs ? { type: 'stopTask' } : { type: 'asPlanned' };
    case 'ignore':
    case 'release':
    case 'claim':
    case 'finalize':
    case 'cancel':
    case 'expire':
    case 'writeOutcome':
    case 'removeFinalizer':
      return { type: 'asPlanned' };
  }
}

/** The drain window from SIGTERM: `drainSeconds` (the Runtime's spec.drainSeconds). */
export function drainFrom(nowMs: number, drainSeconds: number): Drain {
  return { sinceMs: nowMs, deadlineMs: nowMs + drainSeconds * 1000 };
}
