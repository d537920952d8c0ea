/** The events of the Run state machine, who sends them, and the reasons they carry. */
import type { ArtifactRecord, Run, RunEndpoint, RUN_REASONS, SourceSnapshot } from '@kruntimes/api';

/** Who writes a Run's status (docs/lifecycle.md). */
export type WriterRole = 'scheduler' | 'runtimed' | 'stale-recovery' | 'controller-manager';

export type UnschedulableReason =
  | typeof RUN_REASONS.runtimeNotFound
  | typeof RUN_REASONS.noReadyPods
  | typeof RUN_REASONS.noCapacity
  /** spec.scaling set and no free slot: the message says whether the pool grows or is at its maximum. */
  | typeof RUN_REASONS.waitingForCapacity
  /** The namespace holds all the run slots its `kruntimes.io/run-slots` annotation allows. */
  | typeof RUN_REASONS.runSlotCapReached
  | AdmissionRefusalReason;
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
/** PodAtCapacity: the Pod's slots are taken; PodDraining: the Pod is stopping or marked for scale-down. */
export type ClaimRefusalReason = typeof RUN_REASONS.podAtCapacity | typeof RUN_REASONS.podDraining;
export type InterruptReason =
  | typeof RUN_REASONS.ownerLost
  | typeof RUN_REASONS.cancelUnconfirmed
  /** runtimed: its Pod was told to stop and the task was still running when the drain window ended. */
  | typeof RUN_REASONS.drainWindowExceeded
  /** runtimed: the Runtime Server restarted (killed or crashed) during the task and has no record of it. */
  | typeof RUN_REASONS.runtimeServerLost;

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
  /**
   * runtimed: its Pod was told to stop (rollout, scale-down, eviction, node drain) and it
   * unregistered the function Run (in-flight invocations ended) and reported the release:
   * Running or Ready -> Pending, attempt + 1 for the next owner, no backoff, counted in
   * status.plannedMoves and not against maxAttempts (reason Drained).
   */
  | { type: 'HandOver'; message: string }
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

/** One event type's own shape, e.g. `EventOf<'Bind'>` is `{ type: 'Bind'; pod: string; podUID: string }`. */
export type EventOf<T extends RunEventType> = Extract<RunEvent, { type: T }>;

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
