/** The status helpers every event handler builds its next status with. */
import { CONDITION_TYPES, RUN_REASONS, boundedMessage, runModeKind } from '@kruntimes/api';
import type { RunModeKind, RunPhase, RunReason, RunStatus } from '@kruntimes/api';
import { setCondition } from '../conditions.ts';
import type { RunEventType, TransitionInput, WriterRole } from './events.ts';
import { TransitionRefusedError } from './rules.ts';
import type { RefusalKind, TransitionResult } from './rules.ts';

/** The phase of a Run as stored; a Run nobody has written status for yet is Pending. */
export function currentPhase(run: { readonly status?: Pick<RunStatus, 'phase'> | undefined }): RunPhase {
  return run.status?.phase ?? 'Pending';
}

/** What a handler knows of the write: the Run as stored, the event's type and writer, and the time. */
export interface TransitionContext {
  readonly run: TransitionInput['run'];
  readonly eventType: RunEventType;
  readonly writer: WriterRole;
  readonly now: string;
  readonly phase: RunPhase;
  readonly mode: RunModeKind;
  /** A copy of the stored status: the input may be an informer cache object, never modified. */
  readonly previous: RunStatus;
  readonly attempt: number;
  readonly cancelRequested: boolean;
}

export function transitionContext({ run, event, writer, now }: TransitionInput): TransitionContext {
  const previous: RunStatus = structuredClone(run.status ?? {});
  return {
    run,
    eventType: event.type,
    writer,
    now,
    phase: currentPhase(run),
    mode: runModeKind(run.spec),
    previous,
    attempt: previous.attempt ?? 0,
    cancelRequested: run.spec.cancelRequested === true,
  };
}

export function accept(status: RunStatus): TransitionResult {
  return { ok: true, status };
}

export function refuse(ctx: TransitionContext, kind: RefusalKind, detail: string): TransitionResult {
  return { ok: false, error: new TransitionRefusedError(kind, ctx.phase, ctx.eventType, detail) };
}

/** The status with its Ready condition, reason and message set (and the mode and generation observed). */
export function withReady(ctx: TransitionContext, status: RunStatus, ready: boolean, reason: RunReason, message: string): RunStatus {
  const generation = ctx.run.metadata.generation;
  const bounded = boundedMessage(message);
  const condition = { type: CONDITION_TYPES.ready, status: ready ? 'True' : 'False', reason, message: bounded } as const;
  const next: RunStatus = {
    ...status,
    mode: ctx.mode,
    reason,
    message: bounded,
    conditions: setCondition(status.conditions, condition, ctx.now, generation),
  };
  if (generation !== undefined) next.observedGeneration = generation;
  return next;
}

/** The snapshot's own condition: its lastTransitionTime (False since) starts the bounded wait. */
export function withSourceCondition(
  ctx: TransitionContext,
  status: RunStatus,
  resolved: boolean,
  reason: RunReason,
  message: string,
): RunStatus {
  const condition = {
    type: CONDITION_TYPES.sourceResolved,
    status: resolved ? 'True' : 'False',
    reason,
    message: boundedMessage(message),
  } as const;
  return { ...status, conditions: setCondition(status.conditions, condition, ctx.now, ctx.run.metadata.generation) };
}

/** The status without the Pod assignment: the Run goes back to Pending or waits. */
export function withoutAssignment(status: RunStatus): RunStatus {
  const { assignedPod: _assignedPod, assignedPodUID: _assignedPodUID, ...rest } = status;
  return rest;
}

/** The Run ends in a terminal phase now. */
export function finish(
  ctx: TransitionContext,
  terminal: RunPhase,
  reason: RunReason,
  message: string,
  extra: Partial<RunStatus> = {},
): TransitionResult {
  // The schema is asked of a waiting Run only; the record of responses stays.
  const { waitingInput: _waitingInput, ...rest } = ctx.previous;
  return accept(withReady(ctx, { ...rest, ...extra, phase: terminal, completionTime: ctx.now }, false, reason, message));
}

/**
 * Once the API server stored the cancel request, the user's request wins over whatever
 * the code reported after it (docs/lifecycle.md "Cancel"): the Run ends Cancelled and
 * keeps the report (exit code, outputs) for the record.
 */
export function cancelWins(ctx: TransitionContext, reported: string, extra: Partial<RunStatus> = {}): TransitionResult {
  return finish(ctx, 'Cancelled', RUN_REASONS.cancelled, `cancel requested before the outcome was recorded; ${reported}`, extra);
}

/** The refusal of an event that would keep a Run going whose cancel was requested. */
export function refuseCancelRequested(ctx: TransitionContext): TransitionResult {
  return refuse(ctx, 'precondition', 'cancel was requested; end the Run instead');
}

/** The refusal of a cancel event for a Run whose cancel was not requested. */
export function refuseCancelNotRequested(ctx: TransitionContext): TransitionResult {
  return refuse(ctx, 'precondition', 'spec.cancelRequested is not true');
}
