/**
 * The Run state machine's entry point. The parts live in ./transition/: the events
 * (events.ts), the rules table of which writer may send which event from which phase
 * (rules.ts), the status helpers (status.ts), and one handler per event, grouped by the
 * writer that sends it (scheduler.ts, runtimed.ts, owner.ts, stale-recovery.ts,
 * controller-manager.ts, local-origin.ts).
 */
import type { RunStatus } from '@kruntimes/api';
import { handleEvent } from './transition/event-handlers.ts';
import type { TransitionInput } from './transition/events.ts';
import { TransitionRefusedError, refusalByRules } from './transition/rules.ts';
import type { TransitionResult } from './transition/rules.ts';
import { currentPhase, transitionContext } from './transition/status.ts';

export type { RunEvent, RunEventType, TransitionInput, WriterRole } from './transition/events.ts';
export { TransitionRefusedError } from './transition/rules.ts';
export type { RefusalKind, TransitionResult } from './transition/rules.ts';
export { currentPhase } from './transition/status.ts';

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

/** The rules table first (writer and phase), then the event's own handler. */
function decide(input: TransitionInput): TransitionResult {
  const refusal = refusalByRules(input.event.type, input.writer, currentPhase(input.run));
  if (refusal !== undefined) return { ok: false, error: refusal };
  return handleEvent(transitionContext(input), input.event);
}
