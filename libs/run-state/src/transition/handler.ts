import type { EventOf, RunEventType } from './events.ts';
import type { TransitionResult } from './rules.ts';
import type { TransitionContext } from './status.ts';

/** One event's part of the state machine, called once the rules table allowed the writer and phase. */
export type Handler<T extends RunEventType> = (ctx: TransitionContext, event: EventOf<T>) => TransitionResult;

/** A handler for every event: a new event without one is a compile error. */
export type EventHandlers = { [T in RunEventType]: Handler<T> };
