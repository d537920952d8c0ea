import { RUN_PHASES } from '@kruntimes/api';
import type { RunPhase } from '@kruntimes/api';

/**
 * Every question the rest of kruntimes asks about a phase is answered here, by an
 * exhaustive switch, so that adding a phase is a compile error everywhere it matters.
 */
export type PhaseClass = 'queued' | 'assigned' | 'executing' | 'serving' | 'parked' | 'terminal';

export function classify(phase: RunPhase): PhaseClass {
  switch (phase) {
    case 'Pending':
      return 'queued';
    case 'Scheduled':
      return 'assigned';
    case 'Running':
      return 'executing';
    case 'Ready':
      return 'serving';
    case 'WaitingInput':
      return 'parked';
    case 'Succeeded':
    case 'Failed':
    case 'Timeout':
    case 'Cancelled':
    case 'Interrupted':
      return 'terminal';
  }
}

/** How a Run ended, for callers that answer with it (krt's exit code); undefined while it has not. */
export type FinishKind = 'succeeded' | 'failed' | 'timedOut' | 'cancelled' | 'interrupted';

export function finishKind(phase: RunPhase): FinishKind | undefined {
  switch (phase) {
    case 'Pending':
    case 'Scheduled':
    case 'Running':
    case 'Ready':
    case 'WaitingInput':
      return undefined;
    case 'Succeeded':
      return 'succeeded';
    case 'Failed':
      return 'failed';
    case 'Timeout':
      return 'timedOut';
    case 'Cancelled':
      return 'cancelled';
    case 'Interrupted':
      return 'interrupted';
  }
}

/** The Run waits for a response (WaitingInput): no owner, no capacity, answered through a RunInput. */
export function isWaitingForInput(phase: RunPhase): boolean {
  return classify(phase) === 'parked';
}

/** A terminal phase never changes again (also enforced by a CEL rule on status). */
export function isTerminal(phase: RunPhase): boolean {
  return classify(phase) === 'terminal';
}

/** Not terminal: the Run still needs the platform. `Ready` is active, not finished. */
export function isActive(phase: RunPhase): boolean {
  return !isTerminal(phase);
}

/** The Run has (or is about to have) an owner Pod whose lease and fence matter. */
export function hasOwner(phase: RunPhase): boolean {
  switch (classify(phase)) {
    case 'assigned':
    case 'executing':
    case 'serving':
      return true;
    case 'queued':
    case 'parked':
    case 'terminal':
      return false;
  }
}

/**
 * Whether a Run counts against its assigned Pod's `spec.runs` capacity. Scheduled,
 * Running and Ready hold a unit; a Run that still carries the registration-cleanup
 * finalizer keeps holding it until runtimed has released the Pod-local registration,
 * whatever its phase says. WaitingInput holds none (the checkpoint released it).
 */
export function holdsCapacity(phase: RunPhase, registrationCleanupPending = false): boolean {
  switch (classify(phase)) {
    case 'assigned':
    case 'executing':
    case 'serving':
      return true;
    case 'terminal':
      return registrationCleanupPending;
    case 'queued':
    case 'parked':
      return false;
  }
}

/**
 * An owner is bringing the Run up (Scheduled or Running): Ready may already be written
 * and only a lagging watch not show it yet, so an invoke may look again before refusing.
 */
export function mayTurnReady(phase: RunPhase): boolean {
  switch (classify(phase)) {
    case 'assigned':
    case 'executing':
      return true;
    case 'queued':
    case 'serving':
    case 'parked':
    case 'terminal':
      return false;
  }
}

/** Only a Ready function Run whose Ready condition is True and that is not being deleted. */
export function acceptsInvokes(phase: RunPhase, readyConditionTrue: boolean, deleting: boolean): boolean {
  return classify(phase) === 'serving' && readyConditionTrue && !deleting;
}

/** What `krt wait` / `kubectl wait`-like loops wait for. */
export type WaitTarget = 'ready' | 'finished' | 'input';
export type WaitOutcome = 'satisfied' | 'unreachable' | 'keepWaiting';

/**
 * `ready`: satisfied by Ready, unreachable once terminal (a finished Run never becomes
 * Ready). `finished`: satisfied by any terminal phase. `input`: satisfied while the Run
 * waits for input, unreachable once terminal.
 */
export function waitOutcome(phase: RunPhase, target: WaitTarget): WaitOutcome {
  const phaseClass = classify(phase);
  switch (target) {
    case 'ready':
      if (phaseClass === 'serving') return 'satisfied';
      return phaseClass === 'terminal' ? 'unreachable' : 'keepWaiting';
    case 'finished':
      return phaseClass === 'terminal' ? 'satisfied' : 'keepWaiting';
    case 'input':
      if (phaseClass === 'parked') return 'satisfied';
      return phaseClass === 'terminal' ? 'unreachable' : 'keepWaiting';
  }
}

/** TTL cleanup and completed-Run GC delete only finished Runs, never an active one. */
export function mayBeCollected(phase: RunPhase): boolean {
  return isTerminal(phase);
}

/** Whether the Run ended the way its user asked for (metrics and CLI exit codes). */
export function isSuccessful(phase: RunPhase): boolean {
  return phase === 'Succeeded';
}

export const TERMINAL_PHASES: readonly RunPhase[] = RUN_PHASES.filter(isTerminal);
export const ACTIVE_PHASES: readonly RunPhase[] = RUN_PHASES.filter(isActive);
export const CAPACITY_HOLDING_PHASES: readonly RunPhase[] = RUN_PHASES.filter((phase) => holdsCapacity(phase));

/** The phase as a metric label value (lower-case, stable). */
export function phaseMetricLabel(phase: RunPhase): string {
  return phase.replace(/[A-Z]/g, (letter, offset: number) => (offset === 0 ? '' : '_') + letter.toLowerCase());
}

/** Runs per phase, every phase present (zero-filled) so gauges never go missing. */
export function countByPhase(phases: Iterable<RunPhase>): Record<RunPhase, number> {
  const counts = Object.fromEntries(RUN_PHASES.map((phase) => [phase, 0])) as Record<RunPhase, number>;
  for (const phase of phases) counts[phase] += 1;
  return counts;
}
