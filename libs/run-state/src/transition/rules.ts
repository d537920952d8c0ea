import type { RunPhase, RunStatus } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';
import type { RunEventType, WriterRole } from './events.ts';

export type RefusalKind =
  /** This writer never sends this event. */
  | 'wrongWriter'
  /** The event is not allowed from the Run's current phase. */
  | 'wrongPhase'
  /** The phase allows it, but a precondition on spec or status does not hold. */
  | 'precondition'
  /** A value is over one of the API bounds. */
  | 'bounds'
  /** The owner's report is not newer than the one recorded for this attempt. */
  | 'staleReport';

/** A refused transition: a typed, terminal error (retrying the same event cannot help). */
export class TransitionRefusedError extends KruntimesError {
  readonly refusal: RefusalKind;
  readonly phase: RunPhase;
  readonly event: RunEventType;

  constructor(refusal: RefusalKind, phase: RunPhase, event: RunEventType, detail: string) {
    super('InvalidTransition', `${event} refused in phase ${phase}: ${detail}`, { terminal: true });
    this.name = 'TransitionRefusedError';
    this.refusal = refusal;
    this.phase = phase;
    this.event = event;
  }
}

export type TransitionResult = { ok: true; status: RunStatus } | { ok: false; error: TransitionRefusedError };

interface EventRule {
  writers: readonly WriterRole[];
  from: readonly RunPhase[];
}

/** Which writer may send which event, and from which phases. Everything else is refused. */
export const TRANSITION_RULES: Readonly<Record<RunEventType, EventRule>> = {
  Unschedulable: { writers: ['scheduler'], from: ['Pending'] },
  SourceResolved: { writers: ['scheduler'], from: ['Pending'] },
  SourceUnresolved: { writers: ['scheduler'], from: ['Pending'] },
  SourceFailed: { writers: ['scheduler'], from: ['Pending'] },
  Bind: { writers: ['scheduler'], from: ['Pending'] },
  CancelBeforeAssignment: { writers: ['scheduler'], from: ['Pending'] },
  Claim: { writers: ['runtimed'], from: ['Scheduled'] },
  RefuseClaim: { writers: ['runtimed'], from: ['Scheduled'] },
  HandOver: { writers: ['runtimed'], from: ['Running', 'Ready'] },
  Registered: { writers: ['runtimed'], from: ['Running'] },
  RegistrationLost: { writers: ['runtimed'], from: ['Ready'] },
  Succeeded: { writers: ['runtimed'], from: ['Running'] },
  Failed: { writers: ['runtimed', 'stale-recovery'], from: ['Scheduled', 'Running', 'Ready'] },
  TimedOut: { writers: ['runtimed'], from: ['Running', 'Ready'] },
  CancelAccepted: { writers: ['runtimed'], from: ['Running', 'Ready'] },
  Cancelled: { writers: ['runtimed', 'stale-recovery'], from: ['Scheduled', 'Running', 'Ready'] },
  Requeue: { writers: ['runtimed', 'stale-recovery'], from: ['Scheduled', 'Running', 'Ready'] },
  MarkRecovering: { writers: ['stale-recovery'], from: ['Scheduled', 'Running', 'Ready'] },
  Recovered: { writers: ['stale-recovery'], from: ['Scheduled', 'Running', 'Ready'] },
  Interrupted: { writers: ['runtimed', 'stale-recovery'], from: ['Scheduled', 'Running', 'Ready'] },
  WaitForInput: { writers: ['runtimed'], from: ['Running'] },
  InputReceived: { writers: ['controller-manager'], from: ['WaitingInput'] },
  WaitTimedOut: { writers: ['controller-manager'], from: ['WaitingInput'] },
  WaitCancelled: { writers: ['controller-manager'], from: ['WaitingInput'] },
  RecordOrigin: { writers: ['controller-manager'], from: ['Pending'] },
};

/** The refusal of an event this writer never sends, or that the Run's phase does not allow; undefined when the table allows it. */
export function refusalByRules(event: RunEventType, writer: WriterRole, phase: RunPhase): TransitionRefusedError | undefined {
  const rule = TRANSITION_RULES[event];
  if (!rule.writers.includes(writer)) {
    return new TransitionRefusedError('wrongWriter', phase, event, `only ${rule.writers.join(', ')} may send it, not ${writer}`);
  }
  if (!rule.from.includes(phase))
    return new TransitionRefusedError('wrongPhase', phase, event, `allowed only from ${rule.from.join(', ')}`);
  return undefined;
}
