import { RUN_REASONS } from '@kruntimes/api';
import type { ArtifactRecord, Run, RunSpec, RunStatus } from '@kruntimes/api';
import { resolveRetryPolicy, transition } from '@kruntimes/run-state';
import type { ArtifactFailureReason, RunEvent } from '@kruntimes/run-state';

/** How the local execution ended, as the Runtime Server reported it (or did not). */
export type LocalExit =
  | { type: 'completed'; exitCode: number; outputs: Record<string, string> }
  | { type: 'timedOut' }
  | { type: 'startFailed'; message: string }
  /** The user stopped krt (Ctrl-C): the execution was cancelled. */
  | { type: 'cancelled'; exitCode?: number }
  /**
   * The Runtime Server ended the execution unexpectedly, or the stream was lost. `reason`:
   * a cause more specific than a lost owner (decideLostExecutionReason), as runtimed keeps it.
   */
  | { type: 'lost'; message: string; reason?: typeof RUN_REASONS.runtimeServerLost };

/** The check of the declared artifacts after exit 0 (`none`: the task declares none). */
export type ArtifactCheck =
  { type: 'none' } | { type: 'verified'; records: ArtifactRecord[] } | { type: 'failed'; reason: ArtifactFailureReason; message: string };

/**
 * The event runtimed would write for this ending of the only attempt (task-execution.ts
 * and run-work.ts attemptFailed, with no retry: a local run is one attempt). An
 * interrupted execution of a task that is not retrySafe is Interrupted, like on the
 * cluster; of a retrySafe one, which the cluster would retry, Failed.
 */
export function outcomeEvent(spec: RunSpec, exit: LocalExit, artifacts: ArtifactCheck): RunEvent {
  const policy = resolveRetryPolicy('task', spec.retryPolicy);
  const attempt = `attempt 1 of ${policy.maxAttempts === 1 ? '1' : `${String(policy.maxAttempts)} (krt run --local runs one attempt)`}`;
  switch (exit.type) {
    case 'completed':
      if (exit.exitCode !== 0) {
        return {
          type: 'Failed',
          reason: RUN_REASONS.nonZeroExit,
          message: `${attempt}: exited with code ${exit.exitCode}`,
          exitCode: exit.exitCode,
        };
      }
      switch (artifacts.type) {
        case 'none':
          return { type: 'Succeeded', outputs: { ...exit.outputs } };
        case 'verified':
          return { type: 'Succeeded', outputs: { ...exit.outputs }, artifacts: artifacts.records };
        case 'failed':
          return { type: 'Failed', reason: artifacts.reason, message: artifacts.message, exitCode: 0 };
      }
      break;
    case 'timedOut':
      return {
        type: 'TimedOut',
        reason: RUN_REASONS.timeout,
        message: `ran longer than spec.timeout (${spec.timeout ?? ''}) since startTime`,
      };
    case 'startFailed':
      return { type: 'Failed', reason: RUN_REASONS.failed, message: `${attempt}: could not start: ${exit.message}` };
    case 'cancelled':
      return {
        type: 'Cancelled',
        message: 'krt run --local was interrupted: the task was stopped',
        ...(exit.exitCode === undefined ? {} : { exitCode: exit.exitCode }),
      };
    case 'lost':
      return policy.retrySafe
        ? { type: 'Failed', reason: RUN_REASONS.failed, message: `${attempt}: ${exit.message}` }
        : {
            type: 'Interrupted',
            reason: exit.reason ?? RUN_REASONS.ownerLost,
            message: `not retried: the task is not retrySafe: ${exit.message}`,
          };
  }
}

/** What a local run's status.json holds: a RunStatus without the fields of a cluster (Pod, generation, report number). */
export type LocalStatus = Omit<
  RunStatus,
  'assignedPod' | 'assignedPodUID' | 'observedGeneration' | 'reportSequence' | 'notBefore' | 'endpoint'
>;

/**
 * The terminal status of a local run: the Run state machine's own answer to `event` from
 * Running (as runtimed writes it), so that phase, reason, message, exit code, outputs
 * (their bounds), artifacts (against the declaration) and conditions are exactly what
 * the cluster would record. A refused event (outputs over the bounds) fails the run
 * with the state machine's reason, as runtimed's refused write would leave it.
 */
export function localStatus(run: Pick<Run, 'metadata' | 'spec'>, event: RunEvent, startTime: string, now: string): LocalStatus {
  const running: Pick<Run, 'metadata' | 'spec' | 'status'> = {
    metadata: run.metadata,
    spec: event.type === 'Cancelled' ? { ...run.spec, cancelRequested: true } : run.spec,
    status: { phase: 'Running', mode: 'task', attempt: 1, startTime, assignedPod: 'local', assignedPodUID: 'local' },
  };
  let result = transition({ run: running, event, writer: 'runtimed', now });
  if (!result.ok) {
    // The exit code of the report that was refused, if it had one.
    const exitCode = event.type === 'Succeeded' ? 0 : (event as { exitCode?: number }).exitCode;
    const refused: RunEvent = {
      type: 'Failed',
      reason: RUN_REASONS.failed,
      message: `the result was refused: ${result.error.message}`,
      ...(exitCode === undefined ? {} : { exitCode }),
    };
    result = transition({ run: running, event: refused, writer: 'runtimed', now });
    if (!result.ok) throw result.error;
  }
  const {
    assignedPod: _pod,
    assignedPodUID: _podUID,
    observedGeneration: _generation,
    reportSequence: _sequence,
    notBefore: _notBefore,
    endpoint: _endpoint,
    ...status
  } = result.status;
  return status;
}
