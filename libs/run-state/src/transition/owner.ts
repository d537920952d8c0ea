/**
 * The events both runtimed and stale-recovery send: the owner about its own attempt,
 * stale-recovery about a lost owner once the fence holds.
 */
import { RUN_REASONS } from '@kruntimes/api';
import type { RunStatus } from '@kruntimes/api';
import { classify } from '../classification.ts';
import { decideRetry, retryBudgetStart } from '../retry.ts';
import type { AttemptFailureCause, RetryDecision } from '../retry.ts';
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

type OwnerEvent = 'Failed' | 'Cancelled' | 'Requeue' | 'Interrupted';

export const OWNER_HANDLERS: Pick<EventHandlers, OwnerEvent> = {
  Failed: (ctx, event) => {
    const reported = event.exitCode === undefined ? {} : { exitCode: event.exitCode };
    if (ctx.cancelRequested) return cancelWins(ctx, `the attempt then failed (${event.reason}): ${event.message}`, reported);
    return finish(ctx, 'Failed', event.reason, event.message, reported);
  },
  Cancelled: (ctx, event) => {
    if (!ctx.cancelRequested) return refuseCancelNotRequested(ctx);
    const reported = event.exitCode === undefined ? {} : { exitCode: event.exitCode };
    return finish(ctx, 'Cancelled', RUN_REASONS.cancelled, event.message, reported);
  },
  Requeue: requeue,
  Interrupted: (ctx, event) => finish(ctx, 'Interrupted', event.reason, event.message),
};

/** Back to Pending for the next attempt after the backoff, when the retry policy allows one. */
function requeue(ctx: TransitionContext, event: EventOf<'Requeue'>): TransitionResult {
  if (ctx.cancelRequested) return refuseCancelRequested(ctx);
  if (event.cause === 'ownerLost' && ctx.writer !== 'stale-recovery') {
    return refuse(ctx, 'wrongWriter', 'only stale-recovery may requeue after a lost owner');
  }
  const cause = event.cause === 'ownerLost' && classify(ctx.phase) === 'assigned' ? 'ownerLostBeforeStart' : event.cause;
  const decision = decideRetry(ctx.mode, ctx.run.spec.retryPolicy, ctx.attempt, cause, retryBudgetStart(ctx.previous));
  if (!decision.retry) return refuse(ctx, 'precondition', noRetryDetail(ctx, cause, decision));
  if (!Number.isFinite(event.backoffSeconds) || event.backoffSeconds < 0) {
    return refuse(ctx, 'precondition', 'backoffSeconds must be a finite, non-negative number');
  }
  const notBefore = new Date(Date.parse(ctx.now) + event.backoffSeconds * 1000).toISOString();
  const status: RunStatus = { ...withoutAssignment(ctx.previous), phase: 'Pending', attempt: decision.nextAttempt, notBefore };
  return accept(withReady(ctx, status, false, RUN_REASONS.retryBackoff, event.message));
}

/** Why the retry policy gives no further attempt. */
function noRetryDetail(ctx: TransitionContext, cause: AttemptFailureCause, decision: RetryDecision & { retry: false }): string {
  if (decision.why === 'notRetrySafe') return 'the task is not retrySafe';
  const runsOnce = ctx.mode === 'task' && ctx.run.spec.retryPolicy?.retrySafe !== true && cause === 'attemptFailed';
  return runsOnce ? 'the task is not retrySafe: it runs once' : 'no attempts left';
}
