import { RUN_REASONS } from '@kruntimes/api';
import type { RunPhase } from '@kruntimes/api';
import type { ReconcileResult } from '@kruntimes/controller-runtime';
import { pathExists } from '@kruntimes/host';
import { runtimeServerV1 } from '@kruntimes/proto';
import type { RunEvent } from '@kruntimes/run-state';
import { exitZeroOutcome, grantAccess, removeUnnamed } from './artifact-outcome.ts';
import { waitEnded } from './input-wait.ts';
import { lostExecutionReason, settleBrokenStream } from './lost-execution.ts';
import { COUNTED_BEFORE, MAX_REMEMBERED_EXECUTIONS, UnwrittenOutcomes, movedOn } from './outcome-record.ts';
import type { AttemptEnd, Count, Ended } from './outcome-record.ts';
import { resumeFailed } from './resume.ts';
import { STOPPED_OUTCOME, exitReasonName, logEvent } from './task-events.ts';
import type { TaskOutcome } from './metrics.ts';
import type { Execution, ReconcileContext, RunWork } from './run-work.ts';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import type { Run } from '@kruntimes/api';
import { entrypointFile, runEnv } from './workspace.ts';

const { ExitReason } = runtimeServerV1;

/**
 * After an Execute stream broke, how long runtimed asks the Runtime Server what became of
 * the execution, on top of the cancel grace period (the Runtime Server stops an
 * execution whose stream closed, so it ends within that period once it notices).
 */
const LOST_EXECUTION_MARGIN_MS = 15_000;

/** What an execution gets besides the Run: its artifacts access, and for a continuation the checkpoint and response. */
interface ExecuteExtras {
  artifacts: runtimeServerV1.ArtifactAccess | undefined;
  resume: runtimeServerV1.Resume | undefined;
}

/** Read anew after an await: a stop may have marked the execution meanwhile. */
function stopped(execution: Execution): boolean {
  return execution.stoppedFor !== undefined;
}

/** How an execution's event stream ended: its exit, or the error that cut it. */
interface StreamEnd {
  exited: runtimeServerV1.ExecutionExited | undefined;
  failure: unknown;
  /** The stream delivered `started`: the Runtime Server had the execution running. */
  startedSeen?: boolean;
}

/**
 * A task Run on this Pod: start the attempt's execution in the background, follow its
 * events into structured logs, write the outcome when it ends, and stop it on purpose
 * (cancel, lifetime timeout).
 */
export class TaskExecution {
  readonly #work: RunWork;
  /**
   * Task attempts (`uid/attempt`) this process started: an attempt runs at most once per
   * process, whatever a lagging cache says afterwards (across restarts the attempt's
   * workspace, then its outcome record, is the marker). Bounded; insertion order makes it a FIFO.
   */
  readonly #executed = new Set<string>();
  /** Ends of attempts whose outcome is not written yet, in memory and on the Pod (written by writeOutcome). */
  readonly #unwritten: UnwrittenOutcomes;

  constructor(work: RunWork) {
    this.#work = work;
    this.#unwritten = new UnwrittenOutcomes(() => work.options.workspaces.outcomesDir(), work.options.logger);
  }

  async execute(ctx: ReconcileContext, lifetimeRemainingMs: number | undefined): Promise<ReconcileResult | undefined> {
    const { key, run, epoch } = ctx;
    const { options } = this.#work;
    const existing = this.#work.local.get(key);
    if (existing?.execution !== undefined) {
      return lifetimeRemainingMs === undefined ? undefined : { requeueAfterMs: Math.max(0, lifetimeRemainingMs) };
    }
    const executionId = `${epoch.uid}/${epoch.attempt}`;
    if (this.#executed.has(executionId)) return undefined;
    // The cache may lag: an execution that just ended and wrote its outcome would
    // otherwise look like a Running task that still has to run.
    await options.runs.verify(epoch, ['Running'], ctx.written === true ? run : undefined);
    if (await pathExists(await options.workspaces.attemptDir(epoch.uid, epoch.attempt))) {
      // This attempt's workspace exists but no execution does: runtimed restarted while
      // it ran, and the Runtime Server stopped it when runtimed's stream closed. What it
      // did is unknown, so the attempt failed (retried only within the user's policy).
      // Recorded before the workspace goes, like any end: it never runs again.
      const end: AttemptEnd = {
        type: 'interrupted',
        message: 'runtimed restarted during the execution, which the Runtime Server then stopped',
      };
      await this.#writeEnded(ctx, { record: { uid: epoch.uid, attempt: epoch.attempt, end }, count: COUNTED_BEFORE });
      return undefined;
    }
    // From the snapshot, its digest checked: a refused one failed the Run and runs nothing.
    const workdir = await this.#work.prepareWorkspace(ctx);
    if (workdir === undefined) return undefined;
    const state = this.#work.track(ctx, 'task');
    this.#rememberExecuted(executionId);
    const execution: Execution = { id: executionId, abort: new AbortController(), done: Promise.resolve() };
    state.execution = execution;
    execution.done = this.#runExecution(ctx, workdir, execution, lifetimeRemainingMs);
    return undefined;
  }

  /**
   * Whether this Pod holds the end of the Run's current attempt with its outcome not yet
   * written (kept in memory, or recorded on the Pod by this process or by one before a
   * restart), while no execution of it is in flight here (its own end writes it). On the
   * way, drops the records of attempts the cached Run went past (decideOutcomeRecord).
   */
  async outcomeUnwritten(key: string, run: ReadonlyDeep<Run>): Promise<boolean> {
    const recorded = await this.#unwritten.recordsCurrentAttempt(key, run);
    if (this.#work.local.get(key)?.execution !== undefined) return false;
    return recorded || this.#unwritten.kept(run.metadata.uid ?? '', run.status?.attempt ?? 0) !== undefined;
  }

  /**
   * Drops the records of Runs that are gone from the (synced) cache: deleted while the
   * outcome waited, perhaps while runtimed was down. Called when a reconcile finds its
   * Run gone and once after a start.
   */
  async dropRecordsOfGoneRuns(namespace: string): Promise<void> {
    await this.#unwritten.dropRecordsOfGoneRuns(
      () => new Set(this.#work.options.cachedRuns(namespace).map((run) => run.metadata.uid ?? '')),
    );
  }

  /**
   * Writes the outcome of an attempt that ended here, kept in memory or, after a restart,
   * from its record on the Pod. A failure that is not the Run moving on keeps it and
   * throws: the reconcile is retried with backoff.
   */
  async writeOutcome(ctx: ReconcileContext): Promise<undefined> {
    const { uid, attempt } = ctx.epoch;
    let ended = this.#unwritten.kept(uid, attempt);
    if (ended === undefined) {
      ended = await this.#unwritten.readRecord(ctx.epoch, ctx.log);
      if (ended === undefined) return undefined;
      ctx.log.info({ end: ended.record.end.type }, 'writing the outcome recorded on the Pod before runtimed restarted');
    }
    await this.#writeEnded(ctx, ended);
    ctx.log.info('task outcome written after the API server answered again');
    return undefined;
  }

  /**
   * Stops this epoch's work (task: SIGTERM, grace, SIGKILL; function: unregister) and
   * cleans up. `beforeStopping` runs once the execution is marked stopped on purpose and
   * before it is signalled, so that an end of it meanwhile writes nothing of its own.
   * Returns how a stopped task exited, if it did here.
   */
  readonly stop = async (
    ctx: ReconcileContext,
    why: 'cancel' | 'expire',
    beforeStopping?: () => Promise<void>,
  ): Promise<Execution['exited']> => {
    const { options } = this.#work;
    const execution = this.#work.local.get(ctx.key)?.execution;
    if (execution !== undefined) execution.stoppedFor = why;
    await beforeStopping?.();
    if (execution !== undefined) {
      const { found } = await options.server.cancel(execution.id, options.cancelGraceMs);
      ctx.log.info({ found }, 'stopping the task');
      await execution.done;
    }
    await this.#work.cleanUp(ctx);
    await options.runs.removeFinalizer(ctx.epoch);
    return execution?.exited;
  };

  /** Runs in the background (not in a reconcile worker): a task may run for hours. */
  async #runExecution(
    ctx: ReconcileContext,
    workdir: string,
    execution: Execution,
    lifetimeRemainingMs: number | undefined,
  ): Promise<void> {
    const { options, now } = this.#work;
    const started = now();
    // A continuation starts from its checkpoint, read and verified first (bounded retries).
    const resume = await options.artifacts.checkpoints.load(ctx, execution.abort.signal);
    let streamEnd: StreamEnd = { exited: undefined, failure: undefined };
    // A stop while the checkpoint was read (cancel, expire, release) starts nothing.
    if ((resume.type === 'none' || resume.type === 'ready') && !stopped(execution)) {
      // Only while it runs: a token of an ended execution is refused (StaleAttempt).
      const grant = grantAccess(options.artifacts, ctx, execution);
      try {
        streamEnd = await this.#follow(ctx, workdir, execution, lifetimeRemainingMs, {
          artifacts: grant?.access,
          resume: resume.type === 'ready' ? resume.resume : undefined,
        });
      } finally {
        grant?.withdraw();
      }
    }
    const { exited, failure } = streamEnd;
    if (exited !== undefined) execution.exited = { exitCode: exited.exitCode, signal: exited.signal };
    const seconds = (now() - started) / 1000;
    // Counted once, however many times the outcome has to be written.
    let counted = false;
    const count = (outcome: TaskOutcome): void => {
      if (counted) return;
      counted = true;
      options.metrics.taskFinished(outcome, seconds);
    };
    try {
      // An AwaitInput whose write is in flight decides whether this end is the wait's.
      if (execution.waitWrite !== undefined) await execution.waitWrite;
      if (execution.stoppedFor !== undefined) {
        // Whoever stopped it writes the outcome (Cancelled, Timeout, WaitingInput) or nothing (released).
        options.metrics.taskFinished(STOPPED_OUTCOME[execution.stoppedFor], seconds);
        if (execution.stoppedFor === 'waitingInput') await waitEnded(this.#work, ctx, exitReasonName(exited, failure));
        return;
      }
      let end: AttemptEnd;
      if (resume.type === 'failed' || resume.type === 'interrupted') {
        count('failed');
        end = { type: 'resumeFailed', load: resume };
      } else if (exited === undefined) {
        const reason = lostExecutionReason(failure);
        end = {
          type: 'interrupted',
          message: `lost the execution: ${failure instanceof Error ? failure.message : 'no exit event'}`,
          ...(reason === undefined ? {} : { reason }),
        };
      } else {
        const { reason, exitCode, signal, outputsError } = exited;
        ctx.log.info({ reason, exitCode, signal: signal || undefined, outputsError: outputsError || undefined, seconds }, 'task exited');
        end = { type: 'exited', exited };
      }
      await this.#writeEnded(ctx, { record: { uid: ctx.epoch.uid, attempt: ctx.epoch.attempt, end }, count });
    } catch (error) {
      // Moved on: logged by #writeEnded. Otherwise kept (in memory and on the Pod): the
      // reconcile that follows (enqueued below, retried with backoff while the API server
      // does not answer) writes it from the Run as it then is. Without it the attempt
      // would stay Running until its lifetime ran out (Timeout).
      if (!movedOn(error)) ctx.log.error({ err: error }, 'writing the task outcome failed');
    } finally {
      const current = this.#work.local.get(ctx.key);
      if (current?.execution === execution) delete current.execution;
      options.enqueue(ctx.key);
    }
  }

  /**
   * Execute on the Runtime Server, followed to its end. A stream that breaks before its
   * `exited` (runtimed did not close it) is an ambiguous end: the Runtime Server is asked
   * what became of the attempt, and the ending it recorded counts as if streamed.
   */
  async #follow(
    ctx: ReconcileContext,
    workdir: string,
    execution: Execution,
    lifetimeRemainingMs: number | undefined,
    extra: ExecuteExtras,
  ): Promise<StreamEnd> {
    const streamed = await this.#stream(ctx, workdir, execution, lifetimeRemainingMs, extra);
    if (streamed.exited !== undefined || execution.abort.signal.aborted) return streamed;
    const { options } = this.#work;
    const broken = { failure: streamed.failure, startedSeen: streamed.startedSeen === true };
    return settleBrokenStream(
      options.server,
      ctx,
      execution.id,
      broken,
      options.cancelGraceMs + LOST_EXECUTION_MARGIN_MS,
      options.cancelGraceMs,
    );
  }

  async #stream(
    { run, epoch, log }: ReconcileContext,
    workdir: string,
    execution: Execution,
    lifetimeRemainingMs: number | undefined,
    { artifacts, resume }: ExecuteExtras,
  ): Promise<StreamEnd> {
    const { options } = this.#work;
    let exited: runtimeServerV1.ExecutionExited | undefined;
    let startedSeen = false;
    try {
      const events = options.server.execute(
        {
          executionId: execution.id,
          runUid: epoch.uid,
          attempt: epoch.attempt,
          workdir,
          entrypoint: entrypointFile(options.language),
          args: [...(run.spec.mode.task?.args ?? [])],
          env: runEnv(run, options.runtime, epoch.attempt),
          timeoutMs: lifetimeRemainingMs,
          gracePeriodMs: options.cancelGraceMs,
          ...(artifacts === undefined ? {} : { artifacts }),
          ...(resume === undefined ? {} : { resume }),
        },
        execution.abort.signal,
      );
      for await (const { event } of events) {
        if (event?.$case === 'started') startedSeen = true;
        if (event?.$case === 'exited') exited = event.exited;
        else logEvent(log, event);
      }
    } catch (error) {
      return { exited, failure: error, startedSeen };
    }
    return { exited, failure: undefined };
  }

  /** Writes an attempt's end (UnwrittenOutcomes.write): its record on the Pod, the outcome, and the record goes. */
  async #writeEnded(ctx: ReconcileContext, ended: Ended): Promise<void> {
    await this.#unwritten.write(ended, ctx.log, (end, count) => this.#writeEnd(ctx, end, count));
  }

  /**
   * The outcome of an end, from the Run as the reconcile that calls it sees it (and
   * whatever goes with it: the workspace removed, a requeue or the final phase).
   * Idempotent: called again when the API server did not answer.
   */
  async #writeEnd(ctx: ReconcileContext, end: AttemptEnd, count: Count): Promise<void> {
    switch (end.type) {
      case 'resumeFailed':
        await resumeFailed(this.#work, ctx, end.load);
        return;
      case 'interrupted':
        count('failed');
        await this.#work.attemptFailed(ctx, end.message, {
          interrupted: true,
          ...(end.reason === undefined ? {} : { interruptReason: end.reason }),
        });
        return;
      case 'exited':
        await this.#taskExited(ctx, end.exited, count);
        return;
    }
  }

  async #taskExited(ctx: ReconcileContext, exited: runtimeServerV1.ExecutionExited, count: Count): Promise<void> {
    const { reason, exitCode, message } = exited;
    switch (reason) {
      case ExitReason.EXIT_REASON_COMPLETED:
        if (exitCode === 0) {
          await this.#exitedZero(ctx, exited, count);
          return;
        }
        count('failed');
        await this.#work.attemptFailed(ctx, `exited with code ${exitCode}`, { exitCode });
        return;
      case ExitReason.EXIT_REASON_TIMED_OUT:
        count('timeout');
        await this.#finished(ctx, {
          type: 'TimedOut',
          reason: RUN_REASONS.timeout,
          message: `ran longer than spec.timeout (${ctx.run.spec.timeout ?? ''}) since startTime`,
        });
        return;
      case ExitReason.EXIT_REASON_START_FAILED:
        count('failed');
        await this.#work.attemptFailed(ctx, `could not start: ${message}`);
        return;
      case ExitReason.EXIT_REASON_CANCELLED:
      // A wait runtimed recorded marks the execution stopped on purpose and never gets here:
      // this one was not recorded, so the end is unexplained.
      case ExitReason.EXIT_REASON_WAITING_INPUT:
      case ExitReason.EXIT_REASON_UNSPECIFIED:
      case ExitReason.UNRECOGNIZED:
        count('failed');
        await this.#work.attemptFailed(ctx, `the execution ended unexpectedly (${message || String(reason)})`, { interrupted: true });
        return;
    }
  }

  /**
   * Exit 0: Succeeded, once the artifacts the Run declares are verified in the store. A
   * missing or mismatched one ends it Failed (the same code would give the same result);
   * a store that cannot be read makes the attempt interrupted.
   */
  async #exitedZero(ctx: ReconcileContext, exited: runtimeServerV1.ExecutionExited, count: Count): Promise<void> {
    const { artifacts } = this.#work.options;
    const outcome = await exitZeroOutcome(artifacts, ctx, exited.manifest);
    switch (outcome.type) {
      case 'interrupted':
        count('failed');
        await this.#work.attemptFailed(ctx, `exited 0, but its artifacts could not be verified: ${outcome.message}`, { interrupted: true });
        return;
      case 'failed': {
        count('failed');
        const phase = await this.#finished(ctx, { type: 'Failed', reason: outcome.reason, message: outcome.message, exitCode: 0 });
        ctx.log.info({ phase, reason: outcome.reason, why: outcome.message }, 'exited 0, but its artifacts failed verification');
        return;
      }
      case 'succeeded': {
        count('succeeded');
        // A cancel stored before this write wins: the transition ends the Run Cancelled.
        const phase = await this.#finished(ctx, {
          type: 'Succeeded',
          outputs: { ...exited.outputs },
          ...(outcome.artifacts === undefined ? {} : { artifacts: outcome.artifacts }),
        });
        ctx.log.info(
          { phase, artifacts: outcome.artifacts?.length },
          phase === 'Succeeded' ? 'succeeded' : 'exited 0, but its cancel was already requested',
        );
        if (phase === 'Succeeded' && outcome.artifacts !== undefined) await removeUnnamed(artifacts, ctx, outcome.artifacts);
        return;
      }
    }
  }

  /** The attempt ended with a terminal outcome: its workspace goes, the outcome is written, the epoch is released. */
  async #finished({ key, epoch }: ReconcileContext, outcome: RunEvent): Promise<RunPhase | undefined> {
    await this.#work.options.workspaces.remove(epoch.uid);
    // From the cached Run (fenced on its resourceVersion; a lagging cache gets 409 and a fresh read).
    const written = await this.#work.options.runs.transition(epoch, outcome, this.#work.options.cached(epoch.namespace, epoch.name));
    this.#work.forget(key, epoch);
    return written.status?.phase;
  }

  #rememberExecuted(executionId: string): void {
    this.#executed.add(executionId);
    if (this.#executed.size > MAX_REMEMBERED_EXECUTIONS) {
      const oldest = this.#executed.values().next();
      if (oldest.done !== true) this.#executed.delete(oldest.value);
    }
  }
}
