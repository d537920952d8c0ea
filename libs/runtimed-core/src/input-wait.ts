import { setTimeout as sleep } from 'node:timers/promises';
import { CHECKPOINT_ARTIFACT_ID, artifactObjectKey } from '@kruntimes/api';
import { KruntimesError, isKruntimesError } from '@kruntimes/errors';
import type { Logger } from 'pino';
import type { ResolvedStore } from './artifact-store.ts';
import { checkStoredObject } from './artifact-verification.ts';
import type { Epoch } from './epoch.ts';
import { NotOwnerError, StaleCacheError } from './run-client.ts';
import type { RunClient } from './run-client.ts';
import type { Execution, ReconcileContext, RunWork } from './run-work.ts';

/**
 * Waiting for input on runtimed's side (docs/waiting-input.md "In runtimed"): AwaitInput
 * checks the checkpoint object in the store and records the wait; the execution that
 * waits then ends without an outcome of its own. resume.ts is the continuation.
 */

/** The part of an execution AwaitInput marks: stopped on purpose, so its end writes nothing. */
export type WaitingExecution = Pick<Execution, 'stoppedFor' | 'waitWrite'>;

/** The key of an attempt's checkpoint object. */
export function checkpointKey(store: ResolvedStore, epoch: Pick<Epoch, 'namespace' | 'uid'>, attempt: number): string {
  return artifactObjectKey(store.prefix, epoch.namespace, epoch.uid, attempt, CHECKPOINT_ARTIFACT_ID);
}

/**
 * The checkpoint the execution says it uploaded, against the store: missing or other
 * bytes are CheckpointNotStored (the caller may upload again); a store that cannot be
 * read is ArtifactStoreUnavailable (nothing was recorded: asking again is safe).
 */
export async function verifyCheckpoint(store: ResolvedStore, epoch: Epoch, checkpoint: { size: number; sha256Hex: string }): Promise<void> {
  let problem;
  try {
    problem = await checkStoredObject(
      store,
      checkpointKey(store, epoch, epoch.attempt),
      { id: CHECKPOINT_ARTIFACT_ID, ...checkpoint },
      'the AwaitInput request',
    );
  } catch (error) {
    throw isKruntimesError(error, 'ArtifactStoreUnavailable')
      ? error
      : new KruntimesError('ArtifactStoreUnavailable', `could not read the checkpoint from the store: ${String(error)}`, { cause: error });
  }
  if (problem !== undefined) {
    throw new KruntimesError(
      'CheckpointNotStored',
      `the checkpoint of attempt ${String(epoch.attempt)} is not as granted: ${problem.message}`,
    );
  }
}

/**
 * Records the wait (Running -> WaitingInput, fenced on the epoch) with the execution
 * marked stopped on purpose first, so that an end of it during the write waits for the
 * write and then writes nothing. A refused write (cancel stored, another attempt or Pod,
 * the Run gone) takes the mark back, unless something else stopped the execution
 * meanwhile, and is answered: the code that asked hears that it does not wait.
 */
export async function recordWait(
  runs: Pick<RunClient, 'transition'>,
  epoch: Epoch,
  execution: WaitingExecution | undefined,
  wait: { schema: string; size: number; sha256Hex: string },
  log: Logger,
): Promise<void> {
  if (execution === undefined) throw new KruntimesError('StaleAttempt', 'no running execution holds this grant token');
  if (execution.stoppedFor !== undefined || execution.waitWrite !== undefined) {
    throw new KruntimesError(
      'StaleAttempt',
      execution.stoppedFor === 'waitingInput'
        ? 'this execution already waits for input'
        : `the execution is being stopped (${String(execution.stoppedFor)})`,
    );
  }
  let settle = (): void => undefined;
  execution.stoppedFor = 'waitingInput';
  execution.waitWrite = new Promise<void>((resolve) => {
    settle = resolve;
  });
  try {
    await runs.transition(epoch, {
      type: 'WaitForInput',
      schema: wait.schema,
      checkpoint: { digest: `sha256:${wait.sha256Hex}`, size: wait.size },
    });
    log.info({ checkpointSize: wait.size }, 'waiting for input: WaitingInput recorded');
  } catch (error) {
    // Another stop (cancel, expire, release) may have replaced the mark during the write: it stays.
    if (markedWaiting(execution)) delete execution.stoppedFor;
    log.info({ reason: error instanceof Error ? error.message : String(error) }, 'waiting for input not recorded');
    if (error instanceof NotOwnerError || error instanceof StaleCacheError) {
      throw new KruntimesError('StaleAttempt', `the attempt is no longer current: ${error.message}`, { cause: error });
    }
    // TransitionRefusedError is InvalidTransition (e.g. cancel was requested): passed on as it is.
    if (isKruntimesError(error)) throw error;
    throw new KruntimesError('OwnerUnavailable', 'could not record the wait in the Run status', { cause: error });
  } finally {
    delete execution.waitWrite;
    settle();
  }
}

/** Read anew: the mark may have changed while a write was in flight. */
function markedWaiting(execution: WaitingExecution): boolean {
  return execution.stoppedFor === 'waitingInput';
}

/**
 * The execution of a recorded wait ended (normally EXIT_REASON_WAITING_INPUT: the Runtime
 * Server ends it after the answer): nothing is written, the attempt's local state goes
 * (its workspace, and the Run from the Pod Lease's held runs: WaitingInput holds no
 * capacity). Only if this process still holds exactly that attempt: a later attempt of
 * the Run is never touched.
 */
export async function waitEnded(work: RunWork, { key, epoch, log }: ReconcileContext, reason: string): Promise<void> {
  const state = work.local.get(key);
  if (state !== undefined && (state.uid !== epoch.uid || state.attempt !== epoch.attempt)) return;
  if (await work.options.workspaces.remove(epoch.uid)) log.info({ step: 'workspace-removed' }, 'workspace removed');
  work.forget(key, epoch);
  log.info({ reason }, 'the execution that waits for input ended; the attempt is over');
}

/**
 * Releasing a Run whose execution waits for input: the Runtime Server ends it on its own
 * right after AwaitInput answered, so it gets until `boundMs` to do so before runtimed
 * closes its stream (which would record a cancel instead of the wait's end).
 */
export async function letWaitingExecutionEnd(execution: Pick<Execution, 'stoppedFor' | 'done'>, boundMs: number): Promise<void> {
  if (execution.stoppedFor !== 'waitingInput') return;
  const timer = new AbortController();
  await Promise.race([execution.done, sleep(boundMs, undefined, { signal: timer.signal }).catch(() => undefined)]);
  timer.abort();
}
