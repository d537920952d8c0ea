/** stale-recovery's own events: the suspicion that an owner is lost, and its clearing. */
import { CONDITION_TYPES, RUN_REASONS } from '@kruntimes/api';
import type { EventOf } from './events.ts';
import type { EventHandlers } from './handler.ts';
import type { TransitionResult } from './rules.ts';
import { accept, refuse, withReady } from './status.ts';
import type { TransitionContext } from './status.ts';

type StaleRecoveryEvent = 'MarkRecovering' | 'Recovered';

export const STALE_RECOVERY_HANDLERS: Pick<EventHandlers, StaleRecoveryEvent> = {
  MarkRecovering: (ctx, event) =>
    accept(withReady(ctx, { ...ctx.previous, phase: ctx.phase }, false, RUN_REASONS.recovering, event.message)),
  Recovered: recovered,
};

/** Only undoes MarkRecovering: any other reason was written by the owner and stays. */
function recovered(ctx: TransitionContext, event: EventOf<'Recovered'>): TransitionResult {
  const { previous, phase, mode } = ctx;
  const readyReason = previous.conditions?.find((c) => c.type === CONDITION_TYPES.ready)?.reason;
  if (readyReason !== undefined && readyReason !== RUN_REASONS.recovering) {
    return refuse(ctx, 'precondition', `the Run is ${readyReason}, not Recovering`);
  }
  if (phase === 'Ready') {
    if (mode !== 'function') return refuse(ctx, 'precondition', 'only function Runs are Ready');
    return accept(withReady(ctx, { ...previous, phase }, true, RUN_REASONS.functionRegistered, event.message));
  }
  const reason = phase === 'Scheduled' ? RUN_REASONS.scheduled : mode === 'function' ? RUN_REASONS.registering : RUN_REASONS.executing;
  return accept(withReady(ctx, { ...previous, phase }, false, reason, event.message));
}
