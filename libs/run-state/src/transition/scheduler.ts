/** The scheduler's events (and its snapshot controller's): a Pending Run is placed, waits or ends. */
import { RUN_REASONS } from '@kruntimes/api';
import type { RunStatus, SourceSnapshot } from '@kruntimes/api';
import { sourceSnapshotProblem } from './bounds.ts';
import type { EventOf } from './events.ts';
import type { EventHandlers } from './handler.ts';
import type { TransitionResult } from './rules.ts';
import { accept, finish, refuse, refuseCancelNotRequested, refuseCancelRequested, withReady, withSourceCondition } from './status.ts';
import type { TransitionContext } from './status.ts';

type SchedulerEvent = 'Unschedulable' | 'SourceResolved' | 'SourceUnresolved' | 'SourceFailed' | 'Bind' | 'CancelBeforeAssignment';

export const SCHEDULER_HANDLERS: Pick<EventHandlers, SchedulerEvent> = {
  Unschedulable: (ctx, event) => accept(withReady(ctx, { ...ctx.previous, phase: 'Pending' }, false, event.reason, event.message)),
  SourceResolved: sourceResolved,
  SourceUnresolved: (ctx, event) => {
    if (ctx.previous.source !== undefined) return refuse(ctx, 'precondition', 'status.source already records the snapshot');
    const status = withReady(ctx, { ...ctx.previous, phase: 'Pending' }, false, event.reason, event.message);
    return accept(withSourceCondition(ctx, status, false, event.reason, event.message));
  },
  SourceFailed: (ctx, event) => {
    if (ctx.previous.source !== undefined) return refuse(ctx, 'precondition', 'status.source already records the snapshot');
    const ended = finish(ctx, 'Failed', event.reason, event.message);
    if (!ended.ok) return ended;
    return accept(withSourceCondition(ctx, ended.status, false, event.reason, event.message));
  },
  Bind: bind,
  CancelBeforeAssignment: (ctx) => {
    if (!ctx.cancelRequested) return refuseCancelNotRequested(ctx);
    return finish(ctx, 'Cancelled', RUN_REASONS.cancelledBeforeStart, 'cancelled before it was assigned to a Pod');
  },
};

/** status.source records the snapshot once; the same digest again is accepted, another one never. */
function sourceResolved(ctx: TransitionContext, event: EventOf<'SourceResolved'>): TransitionResult {
  const problem = sourceSnapshotProblem(event.source);
  if (problem !== undefined) return refuse(ctx, 'bounds', problem);
  const recorded = ctx.previous.source;
  if (recorded !== undefined && recorded.digest !== event.source.digest) {
    return refuse(ctx, 'precondition', `status.source already records ${recorded.digest}; a snapshot is never replaced`);
  }
  const source: SourceSnapshot = structuredClone(event.source);
  const message = `source snapshot ${source.digest} (${String(source.size)} bytes) taken; waiting to be scheduled`;
  const status = withReady(ctx, { ...ctx.previous, phase: 'Pending', source }, false, RUN_REASONS.awaitingSchedule, message);
  return accept(withSourceCondition(ctx, status, true, RUN_REASONS.sourceSnapshotted, message));
}

/** Pending -> Scheduled on a Pod; the first bind starts attempt 1. */
function bind(ctx: TransitionContext, event: EventOf<'Bind'>): TransitionResult {
  const { previous, now } = ctx;
  if (ctx.cancelRequested) return refuseCancelRequested(ctx);
  if (previous.notBefore !== undefined && Date.parse(previous.notBefore) > Date.parse(now)) {
    return refuse(ctx, 'precondition', `retry backoff lasts until ${previous.notBefore}`);
  }
  if (event.pod === '' || event.podUID === '') return refuse(ctx, 'precondition', 'pod and podUID are both required');
  const { notBefore: _notBefore, ...rest } = previous;
  const status: RunStatus = {
    ...rest,
    phase: 'Scheduled',
    assignedPod: event.pod,
    assignedPodUID: event.podUID,
    attempt: Math.max(ctx.attempt, 1),
  };
  return accept(withReady(ctx, status, false, RUN_REASONS.scheduled, `assigned to Pod ${event.pod}`));
}
