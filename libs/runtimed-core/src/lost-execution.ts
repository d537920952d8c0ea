import type { RUN_REASONS } from '@kruntimes/api';
import { runtimeServerV1 } from '@kruntimes/proto';
import { decideLostExecutionReason } from '@kruntimes/run-state';
import type { Logger } from 'pino';
import { RuntimeServerError } from './runtime-server.ts';
import type { RuntimeServerClient } from './runtime-server.ts';

const { ExecutionState } = runtimeServerV1;

/** The Runtime Server's GetExecution, as runtimed's client offers it. */
export interface ExecutionLookup {
  execution(runUid: string, attempt: number, timeoutMs: number): Promise<runtimeServerV1.GetExecutionResponse>;
}

/**
 * An Execute stream broke before its `exited`, and the Runtime Server could not say how
 * the execution ended: the outcome is unknown (as an interrupted attempt).
 */
export class ExecutionLostError extends Error {
  /** True when the Runtime Server still reported it running when runtimed stopped waiting. */
  readonly stillRunning: boolean;
  /**
   * True when the Runtime Server had reported it started and then had no record of it: the
   * Runtime Server restarted during the execution (killed or crashed).
   */
  readonly runtimeServerRestarted: boolean;

  constructor(message: string, stillRunning: boolean, cause: unknown, runtimeServerRestarted = false) {
    super(message, { cause });
    this.name = 'ExecutionLostError';
    this.stillRunning = stillRunning;
    this.runtimeServerRestarted = runtimeServerRestarted;
  }
}

/**
 * Pure: the reason of an attempt interrupted by this loss (decideLostExecutionReason): the
 * Runtime Server's own death, not runtimed's or its Pod's, is known only from a restarted
 * Runtime Server without a record of an execution it had reported started.
 */
export function lostExecutionReason(failure: unknown): typeof RUN_REASONS.runtimeServerLost | undefined {
  return decideLostExecutionReason(failure instanceof ExecutionLostError && failure.runtimeServerRestarted);
}

export interface SettleOptions {
  /**
   * How long to keep asking while the execution still runs (a closed stream makes the
   * Runtime Server stop it, so this is its grace period and a margin) or while the
   * Runtime Server does not answer.
   */
  readonly waitMs: number;
  /** Between two questions; default 250 ms. */
  readonly pollMs?: number;
  /** Bound of one question; default 5 s. */
  readonly callTimeoutMs?: number;
  /** The stream delivered the execution's `started`: the Runtime Server had it running. */
  readonly startedSeen?: boolean;
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/**
 * Pure: why an execution the Runtime Server has no record of is lost. One it reported
 * started and then forgot means the Runtime Server restarted while it ran: killed (SIGKILL,
 * out of memory) or crashed; the guard of the task's process group ended it with it.
 */
export function unknownExecutionMessage(startedSeen: boolean): string {
  return startedSeen
    ? 'the Runtime Server restarted during the execution (killed or crashed) and has no record of it; the task was ended with it'
    : 'the Runtime Server has no record of the execution (it restarted or never started it)';
}

/**
 * Settles an execution whose stream broke before its end: asks the Runtime Server what
 * became of the attempt and returns the ending it recorded, exactly as the stream would
 * have delivered it. Still running: asks again, bounded by `waitMs`. No record (the
 * Runtime Server restarted, or it never started the execution), no answer in time, or
 * still running at the bound: rejects with ExecutionLostError.
 */
export async function settleLostExecution(
  server: ExecutionLookup,
  runUid: string,
  attempt: number,
  options: SettleOptions,
): Promise<runtimeServerV1.ExecutionExited> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const pollMs = options.pollMs ?? 250;
  const callTimeoutMs = options.callTimeoutMs ?? 5_000;
  const deadline = now() + options.waitMs;
  for (;;) {
    let running = false;
    let failure: unknown;
    try {
      const answer = await server.execution(runUid, attempt, callTimeoutMs);
      switch (answer.state) {
        case ExecutionState.EXECUTION_STATE_EXITED:
          if (answer.exited !== undefined) return answer.exited;
          throw new ExecutionLostError('the Runtime Server reported an ending without its details', false, undefined);
        case ExecutionState.EXECUTION_STATE_RUNNING:
          running = true;
          break;
        case ExecutionState.EXECUTION_STATE_UNKNOWN:
          throw new ExecutionLostError(
            unknownExecutionMessage(options.startedSeen === true),
            false,
            undefined,
            options.startedSeen === true,
          );
        case ExecutionState.EXECUTION_STATE_UNSPECIFIED:
        case ExecutionState.UNRECOGNIZED:
          throw new ExecutionLostError(
            `the Runtime Server answered an unknown execution state (${String(answer.state)})`,
            false,
            undefined,
          );
      }
    } catch (error) {
      if (error instanceof ExecutionLostError) throw error;
      // A Runtime Server that answered with a code (or lacks the RPC) will not say more.
      if (error instanceof RuntimeServerError && (error.answered || error.code === 'Unimplemented')) {
        throw new ExecutionLostError(`the Runtime Server refused the status query: ${error.message}`, false, error);
      }
      failure = error;
    }
    const left = deadline - now();
    if (left <= 0) {
      throw running
        ? new ExecutionLostError(`the execution was still running ${String(options.waitMs)} ms after its stream broke`, true, undefined)
        : new ExecutionLostError(`the Runtime Server did not answer the status query: ${messageOf(failure)}`, false, failure);
    }
    await sleep(Math.min(pollMs, left));
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * An Execute stream broke before its end (runtimed did not close it): the Runtime
 * Server's record decides, bounded by `waitMs`. An execution it still reports running is
 * cancelled: it never runs on unaccounted for while the attempt is written off.
 */
export async function settleBrokenStream(
  server: ExecutionLookup & Pick<RuntimeServerClient, 'cancel'>,
  { epoch, log }: { epoch: { uid: string; attempt: number }; log: Logger },
  executionId: string,
  { failure, startedSeen }: { failure: unknown; startedSeen: boolean },
  waitMs: number,
  cancelGraceMs: number,
): Promise<{ exited: runtimeServerV1.ExecutionExited | undefined; failure: unknown }> {
  log.warn({ err: failure }, 'the execution stream ended without an exit: asking the Runtime Server what became of it');
  try {
    const exited = await settleLostExecution(server, epoch.uid, epoch.attempt, { waitMs, startedSeen });
    log.info({ reason: exited.reason, exitCode: exited.exitCode }, 'the Runtime Server reported the ending that the stream lost');
    return { exited, failure: undefined };
  } catch (caught) {
    const error = caught instanceof ExecutionLostError ? caught : new ExecutionLostError(String(caught), false, caught);
    if (error.stillRunning) {
      // Never leave it running unaccounted for while the attempt is written off.
      await server.cancel(executionId, cancelGraceMs).catch((cancelError: unknown) => {
        log.warn({ err: cancelError }, 'cancelling the lost execution failed');
      });
    }
    log.warn({ err: error }, 'the execution is lost: its outcome is unknown');
    return { exited: undefined, failure: error };
  }
}
