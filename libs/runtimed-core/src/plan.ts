import { REGISTRATION_CLEANUP_FINALIZER, parseDurationSeconds, runModeKind } from '@kruntimes/api';
import type { Run, RunSpec } from '@kruntimes/api';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import { classify, currentPhase } from '@kruntimes/run-state';

/** What runtimed holds in memory for one Run UID (lost on restart, rebuilt by converging). */
export interface LocalRun {
  uid: string;
  attempt: number;
  mode: 'task' | 'function';
}

/** The one thing a reconcile of a Run does next. */
export type RunAction =
  /** Not this Pod's business. */
  | { type: 'ignore'; why: string }
  /** This Pod holds local state for a Run it no longer owns: drop it locally, write nothing. */
  | { type: 'release'; why: string }
  /** Scheduled on this Pod: Scheduled -> Running. */
  | { type: 'claim' }
  /** Deleted with the cleanup finalizer: unregister, delete the workspace, remove the finalizer. */
  | { type: 'finalize' }
  /** Active and cancel requested: stop the work, clean up, then Cancelled. */
  | { type: 'cancel' }
  /** Active past `spec.timeout` from startTime: stop the work, clean up, then Timeout. */
  | { type: 'expire' }
  /** A function Run in Running: prepare the workspace and register. */
  | { type: 'register' }
  /** A Ready function Run: watch its registration (fatal error, idle timeout). */
  | { type: 'watch'; lifetimeRemainingMs: number | undefined }
  /**
   * A task Run in Running whose execution ended here but whose outcome could not be
   * written (the API server did not answer): write the outcome kept in memory.
   */
  | { type: 'writeOutcome' }
  /** A task Run in Running: execute it, or keep waiting for the execution in flight. */
  | { type: 'execute'; lifetimeRemainingMs: number | undefined }
  /** Terminal but still carrying the finalizer (runtimed stopped between the two writes). */
  | { type: 'removeFinalizer' };

export interface PlanInput {
  run: ReadonlyDeep<Run> | undefined;
  podUID: string;
  runtime: string;
  /** What this process holds for the Run's UID (or, when the Run is gone, for its key). */
  local: LocalRun | undefined;
  /**
   * This Pod holds the end of this Run's current attempt, which ended here but whose
   * outcome is not written yet (the write failed for a reason other than the Run moving
   * on): kept in memory, or recorded on the Pod, also by a runtimed before a restart
   * (outcome-record.ts; decideOutcomeRecord says how long a record is kept).
   */
  outcomeUnwritten?: boolean;
  nowMs: number;
}

/**
 * Decides the next step for one Run from the cached object and local state. Pure: the
 * reconciler does the I/O, and every write it makes is fenced again against the live
 * object, so a decision taken on a stale cache can only lead to a refused write.
 */
export function planRun({ run, podUID, runtime, local, outcomeUnwritten = false, nowMs }: PlanInput): RunAction {
  if (run === undefined)
    return local === undefined ? { type: 'ignore', why: 'the Run is gone' } : { type: 'release', why: 'the Run is gone' };
  if (run.spec.runtime !== runtime) return { type: 'ignore', why: `the Run belongs to Runtime ${run.spec.runtime}` };

  const status = run.status ?? {};
  const mine = status.assignedPodUID === podUID;
  if (local !== undefined && (local.uid !== run.metadata.uid || !mine || local.attempt !== status.attempt)) {
    return {
      type: 'release',
      why: local.uid === run.metadata.uid ? 'the Run moved to another attempt or Pod' : 'the name now holds another Run',
    };
  }
  if (!mine) return { type: 'ignore', why: 'the Run is not assigned to this Pod' };

  const phase = currentPhase(plain<Run>(run));
  const hasFinalizer = run.metadata.finalizers?.includes(REGISTRATION_CLEANUP_FINALIZER) === true;
  if (run.metadata.deletionTimestamp !== undefined) {
    return hasFinalizer ? { type: 'finalize' } : { type: 'ignore', why: 'deleted without the cleanup finalizer' };
  }
  switch (classify(phase)) {
    case 'terminal':
      return hasFinalizer ? { type: 'removeFinalizer' } : { type: 'ignore', why: 'terminal' };
    case 'queued':
    case 'parked':
      return { type: 'ignore', why: `phase ${phase} has no owner` };
    case 'assigned':
      // Claim first even when cancel was requested: runtimed writes Cancelled only for
      // work it owns (the scheduler ends Runs cancelled before assignment).
      return { type: 'claim' };
    case 'executing':
    case 'serving':
      break;
  }
  // The code ended before any cancel or lifetime timeout could be acted on: its outcome
  // stands, however late the API server lets it be written (a cancel stored meanwhile
  // still wins, in the state machine). Deciding on the lifetime counted from startTime
  // instead would turn a task that finished in time into Timeout, and executing would
  // run the attempt a second time (after a restart, its workspace is gone).
  if (outcomeUnwritten && runModeKind(plain<RunSpec>(run.spec)) === 'task') return { type: 'writeOutcome' };
  if (run.spec.cancelRequested === true) return { type: 'cancel' };
  const lifetimeRemainingMs = remainingLifetimeMs(run, nowMs);
  if (lifetimeRemainingMs !== undefined && lifetimeRemainingMs <= 0) return { type: 'expire' };
  if (runModeKind(plain<RunSpec>(run.spec)) === 'task') return { type: 'execute', lifetimeRemainingMs };
  return classify(phase) === 'serving' ? { type: 'watch', lifetimeRemainingMs } : { type: 'register' };
}

/** Whether the record of how an attempt ended on this Pod is still needed. */
export type OutcomeRecordDecision = { type: 'keep' } | { type: 'drop'; why: string };

/**
 * Pure: keep the record of how attempt `attempt` of Run `uid` ended on this Pod while the
 * Run may still take that attempt's outcome (planRun then writes it); drop it once the
 * cached Run went past the attempt: gone (or the name holds another Run), a later attempt,
 * deleting, ended, or waiting for input. A cache that is behind shows only earlier states
 * (the attempt Scheduled, even Pending before its bind): those keep the record, so a
 * lagging cache never loses an outcome, and the write itself is fenced.
 */
export function decideOutcomeRecord(
  record: { uid: string; attempt: number },
  run: ReadonlyDeep<Pick<Run, 'metadata' | 'status'>> | undefined,
): OutcomeRecordDecision {
  if (run?.metadata.uid !== record.uid) return { type: 'drop', why: 'the Run is gone' };
  const attempt = run.status?.attempt ?? 0;
  if (attempt > record.attempt) return { type: 'drop', why: `the Run went on to attempt ${String(attempt)}` };
  if (run.metadata.deletionTimestamp !== undefined) return { type: 'drop', why: 'the Run is being deleted' };
  const phase = currentPhase(plain<Pick<Run, 'status'>>(run));
  switch (classify(phase)) {
    case 'terminal':
    case 'parked':
      return { type: 'drop', why: `the Run is ${phase}` };
    case 'queued':
    case 'assigned':
    case 'executing':
    case 'serving':
      return { type: 'keep' };
  }
}

/**
 * Milliseconds left of `spec.timeout` counted from `status.startTime`, or undefined when
 * the Run has no timeout (or was never claimed).
 */
export function remainingLifetimeMs(run: ReadonlyDeep<Pick<Run, 'spec' | 'status'>>, nowMs: number): number | undefined {
  const timeout = run.spec.timeout === undefined ? undefined : parseDurationSeconds(run.spec.timeout);
  const start = run.status?.startTime === undefined ? Number.NaN : Date.parse(run.status.startTime);
  if (timeout === undefined || Number.isNaN(start)) return undefined;
  return start + timeout * 1000 - nowMs;
}

/**
 * Milliseconds until a Ready function is idle past `idleTimeoutSeconds`, from the
 * Runtime Server's own last-activity clock (no status write per invocation). Undefined
 * when the Run has no idle timeout; never expires while an invocation is in flight.
 */
export function remainingIdleMs(
  idleTimeoutSeconds: number | undefined,
  lastActivity: Date | undefined,
  inFlight: number,
  nowMs: number,
): number | undefined {
  if (idleTimeoutSeconds === undefined || lastActivity === undefined) return undefined;
  if (inFlight > 0) return idleTimeoutSeconds * 1000;
  return lastActivity.getTime() + idleTimeoutSeconds * 1000 - nowMs;
}

/**
 * run-state's functions are pure and typed on plain objects; informer cache objects are
 * ReadonlyDeep. Safe because those functions never write to their input.
 */
export function plain<T>(value: ReadonlyDeep<T>): T {
  return value as T;
}
