/** The controller-manager's events for a Run waiting for input: the response, the timeout, the cancel. */
import { BOUNDS, RUN_INPUT_REASONS, RUN_REASONS, utf8ByteLength } from '@kruntimes/api';
import type { RunStatus } from '@kruntimes/api';
import type { EventOf } from './events.ts';
import type { EventHandlers } from './handler.ts';
import type { TransitionResult } from './rules.ts';
import { accept, cancelWins, finish, refuse, refuseCancelNotRequested, refuseCancelRequested, withReady } from './status.ts';
import type { TransitionContext } from './status.ts';

type InputWaitEvent = 'InputReceived' | 'WaitTimedOut' | 'WaitCancelled';

export const CONTROLLER_MANAGER_HANDLERS: Pick<EventHandlers, InputWaitEvent> = {
  InputReceived: inputReceived,
  WaitTimedOut: (ctx, event) => {
    if (ctx.cancelRequested) return cancelWins(ctx, `then timed out while waiting for input: ${event.message}`);
    return finish(ctx, 'Timeout', RUN_REASONS.timeout, event.message);
  },
  WaitCancelled: (ctx, event) => {
    if (!ctx.cancelRequested) return refuseCancelNotRequested(ctx);
    return finish(ctx, 'Cancelled', RUN_REASONS.cancelled, event.message);
  },
};

type Waiting = NonNullable<RunStatus['waitingInput']>;

/** WaitingInput -> Pending, attempt + 1, resuming from the checkpoint with this response (status.resume). */
function inputReceived(ctx: TransitionContext, event: EventOf<'InputReceived'>): TransitionResult {
  if (ctx.cancelRequested) return refuseCancelRequested(ctx);
  const waiting = ctx.previous.waitingInput;
  if (waiting === undefined) return refuse(ctx, 'precondition', 'status.waitingInput is not set');
  if (ctx.previous.responses?.some((response) => response.responseId === event.responseId) === true) {
    return refuse(ctx, 'precondition', `response ${event.responseId} was already accepted (${RUN_INPUT_REASONS.duplicateResponse})`);
  }
  if (utf8ByteLength(event.input) > BOUNDS.inputDataBytes) {
    return refuse(ctx, 'bounds', `the response is over ${String(BOUNDS.inputDataBytes)} bytes as JSON`);
  }
  const next = ctx.attempt + 1;
  const message = `response ${event.responseId} (RunInput ${event.runInput}) accepted: attempt ${String(next)} continues from the checkpoint of attempt ${String(waiting.checkpoint.attempt)}`;
  return accept(withReady(ctx, resumedStatus(ctx, event, waiting, next), false, RUN_REASONS.inputReceived, message));
}

/** The Pending status of the next attempt: what it resumes from, and the bounded record of responses. */
function resumedStatus(ctx: TransitionContext, event: EventOf<'InputReceived'>, waiting: Waiting, next: number): RunStatus {
  const { waitingInput: _waitingInput, notBefore: _notBefore, ...rest } = ctx.previous;
  const responses = [
    ...(ctx.previous.responses ?? []),
    { responseId: event.responseId, runInput: event.runInput, attempt: next, time: ctx.now },
  ];
  return {
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
  };
}
