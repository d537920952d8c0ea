/** runtimed's own events: the owner claims, registers, reports and stops the Run bound to its Pod. */
import { RUN_REASONS, validateOutputs } from '@kruntimes/api';
import type { RunStatus } from '@kruntimes/api';
import { artifactRecordsProblem, endpointBoundsProblem, waitForInputProblem } from './bounds.ts';
import type { EventOf } from './events.ts';
import type { EventHandlers } from './handler.ts';
import type { TransitionResult } from './rules.ts';
import {
  accept,
  cancelWins,
  finish,
  refuse,
  refuseCancelNotRequested,
  refuseCancelRequested,
  withoutAssignment,
  withReady,
} from './status.ts';
import type { TransitionContext } from './status.ts';

type RuntimedEvent =
  'Claim' | 'RefuseClaim' | 'HandOver' | 'Registered' | 'RegistrationLost' | 'Succeeded' | 'TimedOut' | 'CancelAccepted' | 'WaitForInput';

export const RUNTIMED_HANDLERS: Pick<EventHandlers, RuntimedEvent> = {
  Claim: (ctx) => {
    const isFunction = ctx.mode === 'function';
    return accept(
      withReady(
        ctx,
        { ...ctx.previous, phase: 'Running', startTime: ctx.previous.startTime ?? ctx.now },
        false,
        isFunction ? RUN_REASONS.registering : RUN_REASONS.executing,
        isFunction ? 'preparing the workspace and registering the function' : 'executing',
      ),
    );
  },
  // Allowed with cancel requested too: back in Pending, the scheduler ends it at once
  // (CancelBeforeAssignment), as for any Run cancelled before it was claimed. The
  // attempt stays: it counts executions, and nothing ran; the refusal is written by
  // the would-be owner itself, fenced on its epoch, so that epoch can never start.
  RefuseClaim: (ctx, event) =>
    accept(withReady(ctx, { ...withoutAssignment(ctx.previous), phase: 'Pending' }, false, event.reason, event.message)),
  HandOver: handOver,
  Registered: registered,
  RegistrationLost: (ctx, event) =>
    accept(withReady(ctx, { ...ctx.previous, phase: 'Running' }, false, RUN_REASONS.registrationLost, event.message)),
  Succeeded: succeeded,
  TimedOut: (ctx, event) => {
    if (ctx.cancelRequested) return cancelWins(ctx, `then timed out (${event.reason}): ${event.message}`);
    return finish(ctx, 'Timeout', event.reason, event.message);
  },
  CancelAccepted: (ctx, event) => {
    if (!ctx.cancelRequested) return refuseCancelNotRequested(ctx);
    return accept(withReady(ctx, { ...ctx.previous, phase: ctx.phase }, false, RUN_REASONS.cancelling, event.message));
  },
  WaitForInput: waitForInput,
};

/**
 * A planned move of a function Run off a stopping Pod. It needs a new attempt (the fence:
 * the next owner registers another epoch), but it is no failure: no backoff, and
 * status.plannedMoves, which never decreases, takes it out of the retry budget
 * (retryBudgetStart). With cancel requested the owner cancels instead.
 */
function handOver(ctx: TransitionContext, event: EventOf<'HandOver'>): TransitionResult {
  if (ctx.mode !== 'function')
    return refuse(ctx, 'precondition', 'only function Runs are handed over; a task runs to its end or is interrupted');
  if (ctx.cancelRequested) return refuseCancelRequested(ctx);
  const { notBefore: _notBefore, ...previous } = withoutAssignment(ctx.previous);
  const status: RunStatus = {
    ...previous,
    phase: 'Pending',
    attempt: ctx.attempt + 1,
    plannedMoves: (ctx.previous.plannedMoves ?? 0) + 1,
  };
  return accept(withReady(ctx, status, false, RUN_REASONS.drained, event.message));
}

/** A function Run accepts invokes at its endpoint. */
function registered(ctx: TransitionContext, event: EventOf<'Registered'>): TransitionResult {
  if (ctx.mode !== 'function') return refuse(ctx, 'precondition', 'only function Runs register');
  if (ctx.cancelRequested) return refuse(ctx, 'precondition', 'cancel was requested');
  const boundsProblem = endpointBoundsProblem(event.endpoint);
  if (boundsProblem !== undefined) return refuse(ctx, 'bounds', boundsProblem);
  return accept(
    withReady(
      ctx,
      { ...ctx.previous, phase: 'Ready', endpoint: structuredClone(event.endpoint) },
      true,
      RUN_REASONS.functionRegistered,
      'the function is registered and accepts invokes',
    ),
  );
}

/** A task exited 0; its outputs and artifacts are recorded once they pass the bounds and the declaration. */
function succeeded(ctx: TransitionContext, event: EventOf<'Succeeded'>): TransitionResult {
  if (ctx.mode !== 'task') return refuse(ctx, 'precondition', 'function Runs do not succeed; they end by cancel, timeout or deletion');
  const outputs = event.outputs ?? {};
  const violations = validateOutputs(outputs);
  if (violations.length > 0) return refuse(ctx, 'bounds', violations.map((v) => `${v.field}: ${v.message}`).join('; '));
  const artifacts = event.artifacts ?? [];
  const artifactsProblem = artifactRecordsProblem(ctx.run.spec.artifacts, artifacts);
  if (artifactsProblem !== undefined) return refuse(ctx, artifactsProblem.kind, artifactsProblem.detail);
  const reported: Partial<RunStatus> = {
    exitCode: 0,
    ...(Object.keys(outputs).length > 0 ? { outputs: { ...outputs } } : {}),
    ...(artifacts.length > 0 ? { artifacts: structuredClone(artifacts) } : {}),
  };
  if (ctx.cancelRequested) {
    const keys = Object.keys(outputs);
    return cancelWins(ctx, `the task then exited 0${keys.length > 0 ? ` (outputs: ${keys.join(', ')})` : ''}`, reported);
  }
  return finish(ctx, 'Succeeded', RUN_REASONS.succeeded, 'completed', reported);
}

/** The task stored its checkpoint: its attempt ends and the Pod unit is released while it waits. */
function waitForInput(ctx: TransitionContext, event: EventOf<'WaitForInput'>): TransitionResult {
  if (ctx.mode !== 'task') return refuse(ctx, 'precondition', 'only task Runs wait for input');
  if (ctx.cancelRequested) return refuseCancelRequested(ctx);
  const problem = waitForInputProblem(event.schema, event.checkpoint);
  if (problem !== undefined) return refuse(ctx, problem.kind, problem.detail);
  const { attempt, now } = ctx;
  const status: RunStatus = {
    ...withoutAssignment(ctx.previous),
    phase: 'WaitingInput',
    waitingInput: { schema: event.schema, checkpoint: { attempt, ...event.checkpoint }, since: now },
  };
  const message = `attempt ${String(attempt)} stored its checkpoint and waits for input: respond with a RunInput (krt respond)`;
  return accept(withReady(ctx, status, false, RUN_REASONS.waitingInput, message));
}
