import { createHash } from 'node:crypto';
import { RUN_INPUT_CONDITION_TYPES, RUN_INPUT_REASONS, parseDurationSeconds } from '@kruntimes/api';
import type { ReadonlyDeep, Run, RunInput, RunInputReason } from '@kruntimes/api';
import { classify, currentPhase, isWaitingForInput } from '@kruntimes/run-state';
import { checkInput } from './input-schema.ts';

/** What the RunInput controller does with one RunInput, given the Run as the API server has it now. */
export type RunInputDecision =
  /** Already decided for this generation: nothing to do. */
  | { type: 'none' }
  /** Continue the Run: send InputReceived, then record Accepted with the new attempt. */
  | { type: 'accept'; responseId: string; runInput: string; input: string }
  /** The Run already accepted this response ID: record Accepted (DuplicateResponse) with the attempt it started. */
  | { type: 'duplicate'; attempt: number; message: string }
  /** Refused for good: record Accepted=False with the reason. */
  | { type: 'refuse'; reason: RunInputReason; message: string };

/**
 * The pure decision of the RunInput controller. `run` is read from the API server (not a
 * cache) just before, so a Run that just started waiting is seen waiting; the write that
 * follows is conditional on its resourceVersion, so two responses racing for one wait
 * cannot both continue it.
 */
export function decideRunInput(input: RunInput, run: Run | undefined): RunInputDecision {
  if (isDecided(input)) return { type: 'none' };
  const name = input.metadata.name ?? '';
  const { runName, responseId } = input.spec;
  if (run === undefined) return { type: 'refuse', reason: RUN_INPUT_REASONS.runNotFound, message: `Run ${runName} not found` };
  const earlier = run.status?.responses?.find((response) => response.responseId === responseId);
  if (earlier !== undefined) {
    return {
      type: 'duplicate',
      attempt: earlier.attempt,
      message: `response ${responseId} was already accepted (RunInput ${earlier.runInput}): it continued attempt ${String(earlier.attempt)}; nothing new starts`,
    };
  }
  const phase = currentPhase(run);
  switch (classify(phase)) {
    case 'terminal':
      return { type: 'refuse', reason: RUN_INPUT_REASONS.runFinished, message: `Run ${runName} is finished (${phase})` };
    case 'queued':
    case 'assigned':
    case 'executing':
    case 'serving':
      return {
        type: 'refuse',
        reason: RUN_INPUT_REASONS.runNotWaiting,
        message: `Run ${runName} is ${phase}, not WaitingInput: respond once it waits (krt wait ${runName} --for input)`,
      };
    case 'parked':
      break;
  }
  if (run.spec.cancelRequested === true) {
    return { type: 'refuse', reason: RUN_INPUT_REASONS.runCancelled, message: `Run ${runName} was cancelled while it waited` };
  }
  const schema = run.status?.waitingInput?.schema;
  if (schema === undefined) {
    return { type: 'refuse', reason: RUN_INPUT_REASONS.runNotWaiting, message: `Run ${runName} records no input schema` };
  }
  const checked = checkInput(schema, input.spec.data);
  if (!checked.ok) {
    const reason = checked.problem === 'InputTooLarge' ? RUN_INPUT_REASONS.inputTooLarge : RUN_INPUT_REASONS.inputInvalid;
    return { type: 'refuse', reason, message: checked.message };
  }
  return { type: 'accept', responseId, runInput: name, input: checked.json };
}

/** The RunInput's Accepted condition was written for its current generation. */
export function isDecided(input: ReadonlyDeep<RunInput>): boolean {
  const accepted = input.status?.conditions?.find((condition) => condition.type === RUN_INPUT_CONDITION_TYPES.accepted);
  return accepted !== undefined && accepted.status !== 'Unknown' && accepted.observedGeneration === input.metadata.generation;
}

/** What the controller does about a waiting Run itself (no RunInput involved). */
export type WaitingRunDecision =
  | { type: 'none' }
  /** Cancel was requested while waiting: nothing runs, so it ends Cancelled at once. */
  | { type: 'cancel'; message: string }
  /** spec.timeout, counted from status.startTime, passed while waiting. */
  | { type: 'timeout'; message: string }
  /** Look again when spec.timeout will have passed. */
  | { type: 'requeue'; afterMs: number };

export function decideWaitingRun(run: Run, nowMs: number): WaitingRunDecision {
  if (!isWaitingForInput(currentPhase(run))) return { type: 'none' };
  if (run.spec.cancelRequested === true) return { type: 'cancel', message: 'cancelled while waiting for input' };
  const seconds = run.spec.timeout === undefined ? undefined : parseDurationSeconds(run.spec.timeout);
  const start = run.status?.startTime === undefined ? Number.NaN : Date.parse(run.status.startTime);
  if (seconds === undefined || Number.isNaN(start)) return { type: 'none' };
  const remainingMs = start + seconds * 1000 - nowMs;
  if (remainingMs > 0) return { type: 'requeue', afterMs: remainingMs };
  return { type: 'timeout', message: `spec.timeout (${run.spec.timeout ?? ''}) since startTime passed while the Run waited for input` };
}

/**
 * The name `krt respond` gives the RunInput of one response: the Run's name and a hash of
 * the response ID, so that repeating the same response finds the same object.
 */
export function runInputName(runName: string, responseId: string): string {
  const hash = createHash('sha256').update(responseId).digest('hex').slice(0, 10);
  return `${runName.slice(0, 253 - 1 - 10 - 6)}-input-${hash}`;
}
