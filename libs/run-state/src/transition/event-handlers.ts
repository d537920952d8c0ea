/** The state machine's handlers, one per event, grouped by the writer that sends the event. */
import { CONTROLLER_MANAGER_HANDLERS } from './controller-manager.ts';
import type { EventOf, RunEvent, RunEventType } from './events.ts';
import type { EventHandlers } from './handler.ts';
import { LOCAL_ORIGIN_HANDLERS } from './local-origin.ts';
import { OWNER_HANDLERS } from './owner.ts';
import type { TransitionResult } from './rules.ts';
import { RUNTIMED_HANDLERS } from './runtimed.ts';
import { SCHEDULER_HANDLERS } from './scheduler.ts';
import { STALE_RECOVERY_HANDLERS } from './stale-recovery.ts';
import type { TransitionContext } from './status.ts';

export const EVENT_HANDLERS: EventHandlers = {
  ...SCHEDULER_HANDLERS,
  ...RUNTIMED_HANDLERS,
  ...OWNER_HANDLERS,
  ...STALE_RECOVERY_HANDLERS,
  ...CONTROLLER_MANAGER_HANDLERS,
  ...LOCAL_ORIGIN_HANDLERS,
};

/** The event's own handler; `type` ties the handler's event type to the event's (a correlated union). */
function handleOfType<T extends RunEventType>(ctx: TransitionContext, type: T, event: EventOf<T>): TransitionResult {
  return EVENT_HANDLERS[type](ctx, event);
}

/** The next status for an event the rules table allowed. */
export function handleEvent(ctx: TransitionContext, event: RunEvent): TransitionResult {
  return handleOfType(ctx, event.type, event);
}
