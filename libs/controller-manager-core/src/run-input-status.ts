import { RUN_INPUT_CONDITION_TYPES, RUN_INPUT_REASONS, boundedMessage } from '@kruntimes/api';
import type { Run, RunInput, RunInputReason, RunInputStatus } from '@kruntimes/api';
import { decideRunInput } from '@kruntimes/input-core';
import type { RunInputDecision } from '@kruntimes/input-core';
import { setCondition } from '@kruntimes/run-state';

/** What the RunInput controller records on a RunInput: its Accepted condition, the attempt and the Run's UID. */
export type RunInputOutcome =
  /** This RunInput continued the Run: it started `attempt`. */
  | { kind: 'accepted'; attempt: number; runUID: string; message: string }
  /** Another RunInput with the same response ID had continued the Run: nothing new started. */
  | { kind: 'duplicate'; attempt: number; runUID: string; message: string }
  | { kind: 'refused'; reason: RunInputReason; message: string; runUID?: string };

/**
 * decideRunInput, plus one case it cannot tell from a duplicate: the Run's record of
 * responses names this very RunInput. The controller continued the Run with it, and its
 * status write was lost (a crash, a conflict): it is recorded Accepted, not a duplicate of itself.
 */
export function decideResponse(input: RunInput, run: Run | undefined): RunInputDecision | { type: 'recorded'; attempt: number } {
  const decision = decideRunInput(input, run);
  if (decision.type !== 'duplicate') return decision;
  const earlier = run?.status?.responses?.find((response) => response.responseId === input.spec.responseId);
  if (earlier !== undefined && earlier.runInput === input.metadata.name) return { type: 'recorded', attempt: earlier.attempt };
  return decision;
}

/** The accepted message: which attempt the response started. */
export function acceptedMessage(input: RunInput, attempt: number): string {
  return `response ${input.spec.responseId} accepted: Run ${input.spec.runName} continues as attempt ${String(attempt)}`;
}

/**
 * The RunInput's next status for an outcome: the Accepted condition (setCondition:
 * lastTransitionTime moves only when the status flips), observedGeneration always, and
 * attempt and runUID where known. Never modifies `previous`.
 */
export function runInputStatus(
  previous: RunInputStatus | undefined,
  outcome: RunInputOutcome,
  generation: number | undefined,
  now: string,
): RunInputStatus {
  const condition =
    outcome.kind === 'refused'
      ? { status: 'False' as const, reason: outcome.reason }
      : {
          status: 'True' as const,
          reason: outcome.kind === 'accepted' ? RUN_INPUT_REASONS.accepted : RUN_INPUT_REASONS.duplicateResponse,
        };
  const conditions = setCondition(
    previous?.conditions,
    { type: RUN_INPUT_CONDITION_TYPES.accepted, ...condition, message: boundedMessage(outcome.message) },
    now,
    generation,
  );
  return {
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    conditions,
    ...(outcome.runUID === undefined ? {} : { runUID: outcome.runUID }),
    ...(outcome.kind === 'refused' ? {} : { attempt: outcome.attempt }),
  };
}
