import {
  ARTIFACT_DIGEST_PATTERN,
  LOCAL_RESULT_PHASES,
  BOUNDS,
  RUN_INPUT_REASONS,
  CONDITION_TYPES,
  RUN_REASONS,
  boundedMessage,
  runModeKind,
  utf8ByteLength,
  validateOutputs,
} from '@kruntimes/api';
import type {
  ArtifactRecord,
  LocalResultPhase,
  Run,
  RunArtifacts,
  RunEndpoint,
  RunPhase,
  RunReason,
  RunSpec,
  RunStatus,
  SourceSnapshot,
} from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';
import { classify } from './classification.ts';
import { setCondition } from './conditions.ts';
import { decideRetry, retryBudgetStart } from './retry.ts';

/** Who writes a Run's status (docs/lifecycle.md). */
export type WriterRole = 'scheduler' | 'runtimed' | 'stale-recovery' | 'controller-manager';

export type UnschedulableReason =
  typeof RUN_REASONS.runtimeNotFound | typeof RUN_REASONS.noReadyPods | typeof RUN_REASONS.noCapacity | AdmissionRefusalReason;
/** The scheduler's admission gate at assignment: the block policy and the creator's right to use the Runtime. */
export type AdmissionRefusalReason =
  typeof RUN_REASONS.runtimeSuspended | typeof RUN_REASONS.namespaceBlocked | typeof RUN_REASONS.forbidden;
export type FailureReason =
  | typeof RUN_REASONS.failed
  | typeof RUN_REASONS.nonZeroExit
  | typeof RUN_REASONS.registrationFailed
  | typeof RUN_REASONS.retriesExhausted
  | typeof RUN_REASONS.artifactMissing
  | typeof RUN_REASONS.artifactInvalid
  /** runtimed: the snapshot it was about to run is not status.source.digest; nothing ran. */
  | typeof RUN_REASONS.sourceDigestMismatch;
/** Why a Run's source snapshot cannot be made (yet): it waits Pending, then fails with the same reason. */
export type SourceProblemReason =
  | typeof RUN_REASONS.sourceNotFound
  | typeof RUN_REASONS.sourceTooLarge
  | typeof RUN_REASONS.sourceForbidden
  | typeof RUN_REASONS.sourceDigestMismatch
  | typeof RUN_REASONS.sourceSnapshotConflict;
export type TimeoutReason = typeof RUN_REASONS.timeout | typeof RUN_REASONS.idleTimeout;
export type ClaimRefusalReason = typeof RUN_REASONS.podAtCapacity;
export type InterruptReason = typeof RUN_REASONS.ownerLost | typeof RUN_REASONS.cancelUnconfirmed;

export type RunEvent =
  /** scheduler: the Run stays Pending and says why. */
  | { type: 'Unschedulable'; reason: UnschedulableReason; message: string }
  /** scheduler (its snapshot controller): the execution snapshot is made; status.source records it, once. */
  | { type: 'SourceResolved'; source: SourceSnapshot }
  /** scheduler (its snapshot controller): no snapshot yet; the Run stays Pending and says why. */
  | { type: 'SourceUnresolved'; reason: SourceProblemReason; message: string }
  /** scheduler (its snapshot controller): the source stayed unresolvable for the bounded wait: Pending -> Failed. */
  | { type: 'SourceFailed'; reason: SourceProblemReason; message: string }
  /** scheduler: Pending -> Scheduled on a Pod with free capacity. */
  | { type: 'Bind'; pod: string; podUID: string }
  /** scheduler: Pending and cancel requested -> Cancelled at once. */
  | { type: 'CancelBeforeAssignment' }
  /** runtimed: Scheduled -> Running, sets startTime. */
  | { type: 'Claim' }
  /**
   * runtimed: it will not claim a Run bound to its Pod beyond the Pod's capacity
   * (`spec.runs`): Scheduled -> Pending without the assignment, at the same attempt
   * (nothing ran), for the scheduler to place again.
   */
  | { type: 'RefuseClaim'; reason: ClaimRefusalReason; message: string }
  /** runtimed: function Running -> Ready with its endpoint. */
  | { type: 'Registered'; endpoint: RunEndpoint }
  /** runtimed: the Runtime Server lost the registration; Ready -> Running (registration recovery). */
  | { type: 'RegistrationLost'; message: string }
  /** runtimed: a task exited 0 and, when it declares artifacts, they were verified in the store. */
  | { type: 'Succeeded'; outputs?: Record<string, string>; artifacts?: ArtifactRecord[] }
  /** runtimed or stale-recovery: the Run failed for good. */
  | { type: 'Failed'; reason: FailureReason; message: string; exitCode?: number }
  /** runtimed: lifetime (`spec.timeout`) or idle timeout expired. */
  | { type: 'TimedOut'; reason: TimeoutReason; message: string }
  /**
   * runtimed: it accepted the cancel and is stopping the work (SIGTERM, grace, SIGKILL;
   * or unregistering): the phase stays, Ready is False with reason Cancelling.
   */
  | { type: 'CancelAccepted'; message: string }
  /** runtimed (stopped the code; `exitCode` if the code reported one) or stale-recovery (fence proves the code is gone). */
  | { type: 'Cancelled'; message: string; exitCode?: number }
  /** runtimed (own failed attempt) or stale-recovery (after the fence): back to Pending, attempt + 1. */
  | { type: 'Requeue'; cause: 'attemptFailed' | 'ownerLost'; backoffSeconds: number; message: string }
  /** stale-recovery: the owner looks lost; not ready until fenced. */
  | { type: 'MarkRecovering'; message: string }
  /**
   * stale-recovery: the suspicion behind MarkRecovering cleared (a frozen owner came back
   * and holds the Run again); the phase's own Ready condition is restored.
   */
  | { type: 'Recovered'; message: string }
  /**
   * stale-recovery (the owner is lost) or runtimed (it restarted and its execution is gone):
   * nothing proves what the code did.
   */
  | { type: 'Interrupted'; reason: InterruptReason; message: string }
  /**
   * runtimed: the task stored its checkpoint (verified in the store) and asks for input:
   * Running -> WaitingInput. The attempt ends and its Pod unit is released.
   */
  | { type: 'WaitForInput'; schema: string; checkpoint: { digest: string; size: number } }
  /**
   * controller-manager: a RunInput's data satisfied the schema: WaitingInput -> Pending,
   * attempt + 1, starting from the checkpoint and this response (status.resume).
   */
  | { type: 'InputReceived'; responseId: string; runInput: string; input: string }
  /** controller-manager: spec.timeout passed while waiting. */
  | { type: 'WaitTimedOut'; message: string }
  /** controller-manager: cancel was requested while waiting; nothing runs, so it ends at once. */
  | { type: 'WaitCancelled'; message: string }
  /**
   * controller-manager: a Run executed elsewhere (`spec.origin.local`, by `krt run --local`)
   * goes from Pending straight to the terminal phase its origin recorded; never scheduled.
   */
  | { type: 'RecordOrigin' };

export type RunEventType = RunEvent['type'];

export type RefusalKind =
  /** This writer never sends this event. */
  | 'wrongWriter'
  /** The event is not allowed from the Run's current phase. */
  | 'wrongPhase'
  /** The phase allows it, but a precondition on spec or status does not hold. */
  | 'precondition'
  /** A value is over one of the API bounds. */
  | 'bounds'
  /** The owner's report is not newer than the one recorded for this attempt. */
  | 'staleReport';

/** A refused transition: a typed, terminal error (retrying the same event cannot help). */
export class TransitionRefusedError extends KruntimesError {
  readonly refusal: RefusalKind;
  readonly phase: RunPhase;
  readonly event: RunEventType;

  constructor(refusal: RefusalKind, phase: RunPhase, event: RunEventType, detail: string) {
    super('InvalidTransition', `${event} refused in phase ${phase}: ${detail}`, { terminal: true });
    this.name = 'TransitionRefusedError';
    this.refusal = refusal;
    this.phase = phase;
    this.event = event;
  }
}

export type TransitionResult = { ok: true; status: RunStatus } | { ok: false; error: TransitionRefusedError };

interface EventRule {
  writers: readonly WriterRole[];
  from: readonly RunPhase[];
}

/** Which writer may send which event, and from which phases. Everything else is refused. */
export const TRANSITION_RULES: Readonly<Record<RunEventType, EventRule>> = {
  Unschedulable: { writers: ['scheduler'], from: ['Pending'] },
  SourceResolved: { writers: ['scheduler'], from: ['Pending'] },
  SourceUnresolved: { writers: ['scheduler'], from: ['Pending'] },
  SourceFailed: { writers: ['scheduler'], from: ['Pending'] },
  Bind: { writers: ['scheduler'], from: ['Pending'] },
  CancelBeforeAssignment: { writers: ['scheduler'], from: ['Pending'] },
  Claim: { writers: ['runtimed'], from: ['Scheduled'] },
  RefuseClaim: { writers: ['runtimed'], from: ['Scheduled'] },
  Registered: { writers: ['runtimed'], from: ['Running'] },
  RegistrationLost: { writers: ['runtimed'], from: ['Ready'] },
  Succeeded: { writers: ['runtimed'], from: ['Running'] },
  Failed: { writers: ['runtimed', 'stale-recovery'], from: ['Scheduled', 'Running', 'Ready'] },
  TimedOut: { writers: ['runtimed'], from: ['Running', 'Ready'] },
  CancelAccepted: { writers: ['runtimed'], from: ['Running', 'Ready'] },
  Cancelled: { writers: ['runtimed', 'stale-recovery'], from: ['Scheduled', 'Running', 'Ready'] },
  Requeue: { writers: ['runtimed', 'stale-recovery'], from: ['Scheduled', 'Running', 'Ready'] },
  MarkRecovering: { writers: ['stale-recovery'], from: ['Scheduled', 'Running', 'Ready'] },
  Recovered: { writers: ['stale-recovery'], from: ['Scheduled', 'Running', 'Ready'] },
  Interrupted: { writers: ['runtimed', 'stale-recovery'], from: ['Scheduled', 'Running', 'Ready'] },
  WaitForInput: { writers: ['runtimed'], from: ['Running'] },
  InputReceived: { writers: ['controller-manager'], from: ['WaitingInput'] },
  WaitTimedOut: { writers: ['controller-manager'], from: ['WaitingInput'] },
  WaitCancelled: { writers: ['controller-manager'], from: ['WaitingInput'] },
  RecordOrigin: { writers: ['controller-manager'], from: ['Pending'] },
};

/** The phase of a Run as stored; a Run nobody has written status for yet is Pending. */
export function currentPhase(run: Pick<Run, 'status'>): RunPhase {
  return run.status?.phase ?? 'Pending';
}

export interface TransitionInput {
  run: Pick<Run, 'metadata' | 'spec' | 'status'>;
  event: RunEvent;
  writer: WriterRole;
  /** RFC 3339 time of the write (API server time where the caller has it). */
  now: string;
  /**
   * The owner's number for this report within the current attempt (runtimed counts 1, 2,
   * ... as it makes them). Refused unless higher than the recorded status.reportSequence.
   */
  sequence?: number;
}

/**
 * The Run state machine: the next status for an event from a writer, or a typed
 * refusal. Pure: it never modifies its input (which may be an informer cache object).
 */
export function transition(input: TransitionInput): TransitionResult {
  const { run, event, sequence } = input;
  const recorded = run.status?.reportSequence;
  if (sequence !== undefined && recorded !== undefined && sequence <= recorded) {
    const detail = `report ${String(sequence)} of attempt ${String(run.status?.attempt ?? 0)} is not newer than the recorded ${String(recorded)}`;
    return { ok: false, error: new TransitionRefusedError('staleReport', currentPhase(run), event.type, detail) };
  }
  const result = decide(input);
  if (!result.ok) return result;
  return { ok: true, status: withReportSequence(result.status, run.status?.attempt, sequence) };
}

/** A new attempt starts its own count; otherwise the report's number is recorded (or the old one kept). */
function withReportSequence(status: RunStatus, previousAttempt: number | undefined, sequence: number | undefined): RunStatus {
  if (status.attempt !== previousAttempt) {
    const { reportSequence: _previous, ...rest } = status;
    return rest;
  }
  return sequence === undefined ? status : { ...status, reportSequence: sequence };
}

/** The transition table proper: every event from every phase. */
function decide({ run, event, writer, now }: TransitionInput): TransitionResult {
  const phase = currentPhase(run);
  const rule = TRANSITION_RULES[event.type];
  const refuse = (kind: RefusalKind, detail: string): TransitionResult => ({
    ok: false,
    error: new TransitionRefusedError(kind, phase, event.type, detail),
  });
  if (!rule.writers.includes(writer)) return refuse('wrongWriter', `only ${rule.writers.join(', ')} may send it, not ${writer}`);
  if (!rule.from.includes(phase)) return refuse('wrongPhase', `allowed only from ${rule.from.join(', ')}`);

  const generation = run.metadata.generation;
  const mode = runModeKind(run.spec);
  const previous: RunStatus = structuredClone(run.status ?? {});
  const attempt = previous.attempt ?? 0;
  const cancelRequested = run.spec.cancelRequested === true;

  const withReady = (status: RunStatus, ready: boolean, reason: RunReason, message: string): RunStatus => {
    const bounded = boundedMessage(message);
    const next: RunStatus = {
      ...status,
      mode,
      reason,
      message: bounded,
      conditions: setCondition(
        status.conditions,
        { type: CONDITION_TYPES.ready, status: ready ? 'True' : 'False', reason, message: bounded },
        now,
        generation,
      ),
    };
    if (generation !== undefined) next.observedGeneration = generation;
    return next;
  };
  // The snapshot's own condition: its lastTransitionTime (False since) starts the bounded wait.
  const withSourceCondition = (status: RunStatus, resolved: boolean, reason: RunReason, message: string): RunStatus => ({
    ...status,
    conditions: setCondition(
      status.conditions,
      { type: CONDITION_TYPES.sourceResolved, status: resolved ? 'True' : 'False', reason, message: boundedMessage(message) },
      now,
      generation,
    ),
  });
  const finish = (terminal: RunPhase, reason: RunReason, message: string, extra: Partial<RunStatus> = {}): TransitionResult => {
    // The schema is asked of a waiting Run only; the record of responses stays.
    const { waitingInput: _waitingInput, ...rest } = previous;
    return { ok: true, status: withReady({ ...rest, ...extra, phase: terminal, completionTime: now }, false, reason, message) };
  };
  // Once the API server stored the cancel request, the user's request wins over whatever
  // the code reported after it (docs/lifecycle.md "Cancel"): the Run ends Cancelled and
  // keeps the report (exit code, outputs) for the record.
  const cancelWins = (reported: string, extra: Partial<RunStatus> = {}): TransitionResult =>
    finish('Cancelled', RUN_REASONS.cancelled, `cancel requested before the outcome was recorded; ${reported}`, extra);

  switch (event.type) {
    case 'Unschedulable':
      return { ok: true, status: withReady({ ...previous, phase: 'Pending' }, false, event.reason, event.message) };

    case 'SourceResolved': {
      const problem = sourceSnapshotProblem(event.source);
      if (problem !== undefined) return refuse('bounds', problem);
      const recorded = previous.source;
      if (recorded !== undefined && recorded.digest !== event.source.digest) {
        return refuse('precondition', `status.source already records ${recorded.digest}; a snapshot is never replaced`);
      }
      const source: SourceSnapshot = structuredClone(event.source);
      const message = `source snapshot ${source.digest} (${String(source.size)} bytes) taken; waiting to be scheduled`;
      const status = withReady({ ...previous, phase: 'Pending', source }, false, RUN_REASONS.awaitingSchedule, message);
      return { ok: true, status: withSourceCondition(status, true, RUN_REASONS.sourceSnapshotted, message) };
    }

    case 'SourceUnresolved': {
      if (previous.source !== undefined) return refuse('precondition', 'status.source already records the snapshot');
      const status = withReady({ ...previous, phase: 'Pending' }, false, event.reason, event.message);
      return { ok: true, status: withSourceCondition(status, false, event.reason, event.message) };
    }

    case 'SourceFailed': {
      if (previous.source !== undefined) return refuse('precondition', 'status.source already records the snapshot');
      const ended = finish('Failed', event.reason, event.message);
      if (!ended.ok) return ended;
      return { ok: true, status: withSourceCondition(ended.status, false, event.reason, event.message) };
    }

    case 'Bind': {
      if (cancelRequested) return refuse('precondition', 'cancel was requested; end the Run instead');
      if (previous.notBefore !== undefined && Date.parse(previous.notBefore) > Date.parse(now)) {
        return refuse('precondition', `retry backoff lasts until ${previous.notBefore}`);
      }
      if (event.pod === '' || event.podUID === '') return refuse('precondition', 'pod and podUID are both required');
      const { notBefore: _notBefore, ...rest } = previous;
      return {
        ok: true,
        status: withReady(
          { ...rest, phase: 'Scheduled', assignedPod: event.pod, assignedPodUID: event.podUID, attempt: Math.max(attempt, 1) },
          false,
          RUN_REASONS.scheduled,
          `assigned to Pod ${event.pod}`,
        ),
      };
    }

    case 'CancelBeforeAssignment':
      if (!cancelRequested) return refuse('precondition', 'spec.cancelRequested is not true');
      return finish('Cancelled', RUN_REASONS.cancelledBeforeStart, 'cancelled before it was assigned to a Pod');

    case 'Claim':
      return {
        ok: true,
        status: withReady(
          { ...previous, phase: 'Running', startTime: previous.startTime ?? now },
          false,
          mode === 'function' ? RUN_REASONS.registering : RUN_REASONS.executing,
          mode === 'function' ? 'preparing the workspace and registering the function' : 'executing',
        ),
      };

    case 'RefuseClaim': {
      // Allowed with cancel requested too: back in Pending, the scheduler ends it at once
      // (CancelBeforeAssignment), as for any Run cancelled before it was claimed. The
      // attempt stays: it counts executions, and nothing ran; the refusal is written by
      // the would-be owner itself, fenced on its epoch, so that epoch can never start.
      const { assignedPod: _assignedPod, assignedPodUID: _assignedPodUID, ...rest } = previous;
      return { ok: true, status: withReady({ ...rest, phase: 'Pending' }, false, event.reason, event.message) };
    }

    case 'Registered': {
      if (mode !== 'function') return refuse('precondition', 'only function Runs register');
      if (cancelRequested) return refuse('precondition', 'cancel was requested');
      const boundsProblem = endpointBoundsProblem(event.endpoint);
      if (boundsProblem !== undefined) return refuse('bounds', boundsProblem);
      return {
        ok: true,
        status: withReady(
          { ...previous, phase: 'Ready', endpoint: structuredClone(event.endpoint) },
          true,
          RUN_REASONS.functionRegistered,
          'the function is registered and accepts invokes',
        ),
      };
    }

    case 'RegistrationLost':
      return { ok: true, status: withReady({ ...previous, phase: 'Running' }, false, RUN_REASONS.registrationLost, event.message) };

    case 'Succeeded': {
      if (mode !== 'task') return refuse('precondition', 'function Runs do not succeed; they end by cancel, timeout or deletion');
      const outputs = event.outputs ?? {};
      const violations = validateOutputs(outputs);
      if (violations.length > 0) return refuse('bounds', violations.map((v) => `${v.field}: ${v.message}`).join('; '));
      const artifacts = event.artifacts ?? [];
      const artifactsProblem = artifactRecordsProblem(run.spec.artifacts, artifacts);
      if (artifactsProblem !== undefined) return refuse(artifactsProblem.kind, artifactsProblem.detail);
      const reported = {
        exitCode: 0,
        ...(Object.keys(outputs).length > 0 ? { outputs: { ...outputs } } : {}),
        ...(artifacts.length > 0 ? { artifacts: structuredClone(artifacts) } : {}),
      };
      if (cancelRequested) {
        const keys = Object.keys(outputs);
        return cancelWins(`the task then exited 0${keys.length > 0 ? ` (outputs: ${keys.join(', ')})` : ''}`, reported);
      }
      return finish('Succeeded', RUN_REASONS.succeeded, 'completed', reported);
    }

    case 'Failed': {
      const reported = event.exitCode === undefined ? {} : { exitCode: event.exitCode };
      if (cancelRequested) return cancelWins(`the attempt then failed (${event.reason}): ${event.message}`, reported);
      return finish('Failed', event.reason, event.message, reported);
    }

    case 'TimedOut':
      if (cancelRequested) return cancelWins(`then timed out (${event.reason}): ${event.message}`);
      return finish('Timeout', event.reason, event.message);

    case 'CancelAccepted':
      if (!cancelRequested) return refuse('precondition', 'spec.cancelRequested is not true');
      return { ok: true, status: withReady({ ...previous, phase }, false, RUN_REASONS.cancelling, event.message) };

    case 'Cancelled':
      if (!cancelRequested) return refuse('precondition', 'spec.cancelRequested is not true');
      return finish('Cancelled', RUN_REASONS.cancelled, event.message, event.exitCode === undefined ? {} : { exitCode: event.exitCode });

    case 'Requeue': {
      if (cancelRequested) return refuse('precondition', 'cancel was requested; end the Run instead');
      if (event.cause === 'ownerLost' && writer !== 'stale-recovery') {
        return refuse('wrongWriter', 'only stale-recovery may requeue after a lost owner');
      }
      const cause = event.cause === 'ownerLost' && classify(phase) === 'assigned' ? 'ownerLostBeforeStart' : event.cause;
      const decision = decideRetry(mode, run.spec.retryPolicy, attempt, cause, retryBudgetStart(previous));
      if (!decision.retry) {
        const runsOnce = mode === 'task' && run.spec.retryPolicy?.retrySafe !== true && cause === 'attemptFailed';
        const why =
          decision.why === 'notRetrySafe'
            ? 'the task is not retrySafe'
            : runsOnce
              ? 'the task is not retrySafe: it runs once'
              : 'no attempts left';
        return refuse('precondition', why);
      }
      if (!Number.isFinite(event.backoffSeconds) || event.backoffSeconds < 0) {
        return refuse('precondition', 'backoffSeconds must be a finite, non-negative number');
      }
      const { assignedPod: _assignedPod, assignedPodUID: _assignedPodUID, ...rest } = previous;
      const notBefore = new Date(Date.parse(now) + event.backoffSeconds * 1000).toISOString();
      return {
        ok: true,
        status: withReady(
          { ...rest, phase: 'Pending', attempt: decision.nextAttempt, notBefore },
          false,
          RUN_REASONS.retryBackoff,
          event.message,
        ),
      };
    }

    case 'MarkRecovering':
      return { ok: true, status: withReady({ ...previous, phase }, false, RUN_REASONS.recovering, event.message) };

    case 'Recovered': {
      // Only undoes MarkRecovering: any other reason was written by the owner and stays.
      const readyReason = previous.conditions?.find((c) => c.type === CONDITION_TYPES.ready)?.reason;
      if (readyReason !== undefined && readyReason !== RUN_REASONS.recovering)
        return refuse('precondition', `the Run is ${readyReason}, not Recovering`);
      if (phase === 'Ready') {
        if (mode !== 'function') return refuse('precondition', 'only function Runs are Ready');
        return { ok: true, status: withReady({ ...previous, phase }, true, RUN_REASONS.functionRegistered, event.message) };
      }
      const reason = phase === 'Scheduled' ? RUN_REASONS.scheduled : mode === 'function' ? RUN_REASONS.registering : RUN_REASONS.executing;
      return { ok: true, status: withReady({ ...previous, phase }, false, reason, event.message) };
    }

    case 'Interrupted':
      return finish('Interrupted', event.reason, event.message);

    case 'RecordOrigin': {
      // The status is the origin's record, checked like runtimed's own report (origin.ts).
      const recorded = recordOriginStatus(run.spec, previous);
      if (!recorded.ok) return refuse(recorded.kind, recorded.detail);
      const { status, reason, message } = recorded;
      if (cancelRequested) {
        return {
          ok: true,
          status: withReady(
            { ...status, phase: 'Cancelled' },
            false,
            RUN_REASONS.cancelled,
            `cancel requested before the outcome was recorded; the local run ended ${String(status.phase)} (${reason}): ${message}`,
          ),
        };
      }
      return { ok: true, status: withReady(status, false, reason, message) };
    }
    case 'WaitForInput': {
      if (mode !== 'task') return refuse('precondition', 'only task Runs wait for input');
      if (cancelRequested) return refuse('precondition', 'cancel was requested; end the Run instead');
      const problem = waitForInputProblem(event.schema, event.checkpoint);
      if (problem !== undefined) return refuse(problem.kind, problem.detail);
      const { assignedPod: _assignedPod, assignedPodUID: _assignedPodUID, ...rest } = previous;
      return {
        ok: true,
        status: withReady(
          {
            ...rest,
            phase: 'WaitingInput',
            waitingInput: { schema: event.schema, checkpoint: { attempt, ...event.checkpoint }, since: now },
          },
          false,
          RUN_REASONS.waitingInput,
          `attempt ${String(attempt)} stored its checkpoint and waits for input: respond with a RunInput (krt respond)`,
        ),
      };
    }

    case 'InputReceived': {
      if (cancelRequested) return refuse('precondition', 'cancel was requested; end the Run instead');
      const waiting = previous.waitingInput;
      if (waiting === undefined) return refuse('precondition', 'status.waitingInput is not set');
      if (previous.responses?.some((response) => response.responseId === event.responseId) === true) {
        return refuse('precondition', `response ${event.responseId} was already accepted (${RUN_INPUT_REASONS.duplicateResponse})`);
      }
      if (utf8ByteLength(event.input) > BOUNDS.inputDataBytes) {
        return refuse('bounds', `the response is over ${String(BOUNDS.inputDataBytes)} bytes as JSON`);
      }
      const next = attempt + 1;
      const { waitingInput: _waitingInput, notBefore: _notBefore, ...rest } = previous;
      const responses = [
        ...(previous.responses ?? []),
        { responseId: event.responseId, runInput: event.runInput, attempt: next, time: now },
      ];
      return {
        ok: true,
        status: withReady(
          {
            ...rest,
            phase: 'Pending',
            attempt: next,
            resume: {
              checkpoint: structuredClone(waiting.checkpoint),
              responseId: event.responseId,
              runInput: event.runInput,
              input: event.input,
              attempt: next,
            },
            responses: responses.slice(-BOUNDS.responsesKept),
          },
          false,
          RUN_REASONS.inputReceived,
          `response ${event.responseId} (RunInput ${event.runInput}) accepted: attempt ${String(next)} continues from the checkpoint of attempt ${String(waiting.checkpoint.attempt)}`,
        ),
      };
    }

    case 'WaitTimedOut':
      if (cancelRequested) return cancelWins(`then timed out while waiting for input: ${event.message}`);
      return finish('Timeout', RUN_REASONS.timeout, event.message);

    case 'WaitCancelled':
      if (!cancelRequested) return refuse('precondition', 'spec.cancelRequested is not true');
      return finish('Cancelled', RUN_REASONS.cancelled, event.message);
  }
}

/** A snapshot's digest and size against the API bounds. */
export function sourceSnapshotProblem(source: SourceSnapshot): string | undefined {
  if (!ARTIFACT_DIGEST.test(source.digest)) return 'source digest is not sha256:<64 hex>';
  if (!Number.isSafeInteger(source.size) || source.size < 0 || source.size > BOUNDS.inlineSourceBytes) {
    return `source size ${String(source.size)} is not within 0..${String(BOUNDS.inlineSourceBytes)}`;
  }
  return undefined;
}

/** The schema and checkpoint a WaitForInput records, against the API bounds. */
export function waitForInputProblem(
  schema: string,
  checkpoint: { digest: string; size: number },
): { kind: RefusalKind; detail: string } | undefined {
  if (utf8ByteLength(schema) > BOUNDS.inputSchemaBytes) {
    return { kind: 'bounds', detail: `the input schema is over ${String(BOUNDS.inputSchemaBytes)} bytes` };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(schema);
  } catch {
    return { kind: 'precondition', detail: 'the input schema is not JSON' };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    if (typeof parsed !== 'boolean')
      return { kind: 'precondition', detail: 'the input schema is not a JSON Schema (an object or a boolean)' };
  }
  if (!ARTIFACT_DIGEST.test(checkpoint.digest)) return { kind: 'bounds', detail: 'checkpoint digest is not sha256:<64 hex>' };
  if (!Number.isSafeInteger(checkpoint.size) || checkpoint.size < 0 || checkpoint.size > BOUNDS.checkpointBytes) {
    return { kind: 'bounds', detail: `checkpoint size ${String(checkpoint.size)} is not within 0..${String(BOUNDS.checkpointBytes)}` };
  }
  return undefined;
}

/** Endpoint bounds of the CRD, checked before the write instead of failing it. */
export function endpointBoundsProblem(endpoint: RunEndpoint): string | undefined {
  if (utf8ByteLength(endpoint.url) > BOUNDS.endpointUrlBytes) return `endpoint.url exceeds ${BOUNDS.endpointUrlBytes} bytes`;
  if (endpoint.caBundle !== undefined && Buffer.byteLength(endpoint.caBundle, 'base64') > BOUNDS.caBundleBytes) {
    return `endpoint.caBundle exceeds ${BOUNDS.caBundleBytes} bytes`;
  }
  return undefined;
}

/**
 * The artifacts a Succeeded report carries against what the spec declares: every
 * required output present, nothing undeclared, each within its declaration and bounds.
 * runtimed verified them in the store; this keeps any writer from recording less.
 */
export function artifactRecordsProblem(
  declared: RunArtifacts | undefined,
  records: readonly ArtifactRecord[],
): { kind: RefusalKind; detail: string } | undefined {
  if (declared === undefined) {
    return records.length === 0 ? undefined : { kind: 'precondition', detail: 'the Run declares no artifacts (spec.artifacts)' };
  }
  if (records.length > BOUNDS.artifactCount) {
    return { kind: 'bounds', detail: `${String(records.length)} artifacts, at most ${String(BOUNDS.artifactCount)} allowed` };
  }
  const seen = new Set<string>();
  for (const record of records) {
    const declaration = declared.outputs.find((output) => output.id === record.id);
    if (declaration === undefined) return { kind: 'precondition', detail: `artifact ${record.id} is not declared` };
    if (seen.has(record.id)) return { kind: 'precondition', detail: `artifact ${record.id} is listed twice` };
    seen.add(record.id);
    if (!ARTIFACT_DIGEST.test(record.digest)) return { kind: 'bounds', detail: `artifact ${record.id}: digest is not sha256:<64 hex>` };
    if (!Number.isSafeInteger(record.size) || record.size < 0 || record.size > declaration.maxBytes) {
      return {
        kind: 'bounds',
        detail: `artifact ${record.id}: size ${String(record.size)} is over its maxBytes ${String(declaration.maxBytes)}`,
      };
    }
    if (record.mediaType !== declaration.mediaType) {
      return {
        kind: 'precondition',
        detail: `artifact ${record.id}: media type ${record.mediaType} is not the declared ${declaration.mediaType}`,
      };
    }
  }
  const missing = declared.outputs.filter((output) => output.optional !== true && !seen.has(output.id)).map((output) => output.id);
  if (missing.length > 0) return { kind: 'precondition', detail: `required artifacts missing: ${missing.join(', ')}` };
  return undefined;
}

const ARTIFACT_DIGEST = new RegExp(ARTIFACT_DIGEST_PATTERN);

// ---------------------------------------------------------------------------- RecordOrigin (spec.origin)

/** The reasons a recorded local result may carry, per phase: the ones runtimed writes for a task. */
const ORIGIN_REASONS: Readonly<Record<LocalResultPhase, readonly RunReason[]>> = {
  Succeeded: [RUN_REASONS.succeeded],
  Failed: [RUN_REASONS.failed, RUN_REASONS.nonZeroExit, RUN_REASONS.artifactMissing, RUN_REASONS.artifactInvalid],
  Timeout: [RUN_REASONS.timeout],
};

type OriginRecord = { ok: true; status: RunStatus; reason: RunReason; message: string } | { ok: false; kind: RefusalKind; detail: string };

/**
 * The status a Run with `spec.origin.local` records: the local result, checked like
 * runtimed's own report of a task (a terminal phase and one of its reasons, outputs within
 * the bounds, artifacts against the declaration, a Succeeded exit code 0, start before
 * completion), so that a synced Run says nothing a cluster run could not have said.
 */
function recordOriginStatus(spec: RunSpec, previous: RunStatus): OriginRecord {
  const refuse = (kind: RefusalKind, detail: string): OriginRecord => ({ ok: false, kind, detail });
  const origin = spec.origin?.local;
  if (origin === undefined) return refuse('precondition', 'spec.origin.local is not set');
  if (runModeKind(spec) !== 'task') return refuse('precondition', 'only task Runs are executed locally');
  const { result } = origin;
  if (!(LOCAL_RESULT_PHASES as readonly string[]).includes(result.phase)) {
    return refuse('precondition', `recorded phase ${result.phase} is not one of ${LOCAL_RESULT_PHASES.join(', ')}`);
  }
  const reason = ORIGIN_REASONS[result.phase].find((allowed) => allowed === result.reason);
  if (reason === undefined) return refuse('precondition', `reason ${result.reason} is not one of a ${result.phase} task`);
  if (result.exitCode !== undefined && !Number.isInteger(result.exitCode)) return refuse('precondition', 'exitCode is not an integer');
  if (result.phase === 'Succeeded' && result.exitCode !== 0) return refuse('precondition', 'a Succeeded result has exit code 0');
  const outputs = result.outputs ?? {};
  const violations = validateOutputs(outputs);
  if (violations.length > 0) return refuse('bounds', violations.map((v) => `${v.field}: ${v.message}`).join('; '));
  const artifacts = result.artifacts ?? [];
  if (result.phase !== 'Succeeded' && artifacts.length > 0) return refuse('precondition', 'only a Succeeded result records artifacts');
  const artifactsProblem = result.phase === 'Succeeded' ? artifactRecordsProblem(spec.artifacts, artifacts) : undefined;
  if (artifactsProblem !== undefined) return refuse(artifactsProblem.kind, artifactsProblem.detail);
  const start = Date.parse(result.startTime);
  const completion = Date.parse(result.completionTime);
  if (Number.isNaN(start) || Number.isNaN(completion) || start > completion) {
    return refuse('precondition', 'startTime and completionTime must be RFC 3339 times, the start not after the completion');
  }
  const status: RunStatus = {
    ...previous,
    phase: result.phase,
    attempt: Math.max(previous.attempt ?? 0, 1),
    startTime: result.startTime,
    completionTime: result.completionTime,
    ...(result.exitCode === undefined ? {} : { exitCode: result.exitCode }),
    ...(Object.keys(outputs).length > 0 ? { outputs: { ...outputs } } : {}),
    ...(artifacts.length > 0 ? { artifacts: structuredClone(artifacts) } : {}),
  };
  return { ok: true, status, reason, message: result.message };
}
