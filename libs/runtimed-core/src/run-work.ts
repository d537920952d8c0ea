import { RUN_REASONS, runModeKind } from '@kruntimes/api';
import type { RunSpec, RunStatus } from '@kruntimes/api';
import { pathExists } from '@kruntimes/host';
import { AUTOMATIC_RETRY_ALLOWED, TransitionRefusedError, decideRetry, resolveRetryPolicy, retryBudgetStart } from '@kruntimes/run-state';
import { plain } from './plan.ts';
import type { ReleasedRuns, RunRef } from './pod-lease.ts';
import type { LocalState, ReconcileContext, RunReconcilerOptions } from './reconcile-types.ts';
import { isDefiniteRegistrationFailure } from './runtime-server.ts';
import { SourceMismatchError, runEnv } from './workspace.ts';

// The types every step module shares live in reconcile-types.ts, so that they import no loop.
export type { Execution, LocalState, ReconcileContext } from './reconcile-types.ts';

export interface RunWorkOptions {
  options: RunReconcilerOptions;
  now: () => number;
  /** The reconciler's map of local state, shared with it (it owns the map). */
  local: Map<string, LocalState>;
  released: ReleasedRuns;
}

/**
 * The steps both modes share (local state, registration lookup, cleanup, the end of a
 * failed attempt), and the state they work on, so that the function lifecycle and the
 * task execution each keep only their own steps.
 */
export class RunWork {
  readonly options: RunReconcilerOptions;
  readonly now: () => number;
  readonly local: Map<string, LocalState>;
  /** Epochs whose Pod-local state this process confirmed stopped (reported in the Pod Lease). */
  readonly released: ReleasedRuns;

  constructor({ options, now, local, released }: RunWorkOptions) {
    this.options = options;
    this.now = now;
    this.local = local;
    this.released = released;
  }

  track({ key, epoch }: ReconcileContext, mode: 'task' | 'function'): LocalState {
    let state = this.local.get(key);
    if (state === undefined) {
      state = { uid: epoch.uid, attempt: epoch.attempt, mode };
      this.local.set(key, state);
    }
    return state;
  }

  /** The epoch's Pod-local state is gone: forget it and report it released. */
  forget(key: string, epoch: RunRef): void {
    this.local.delete(key);
    this.released.add(epoch);
  }

  /**
   * This attempt's workspace, written from the Run's snapshot; undefined when the snapshot
   * was refused (SourceMismatchError): the Run then Failed and nothing ran.
   */
  async prepareWorkspace(ctx: ReconcileContext): Promise<string | undefined> {
    try {
      return await this.options.workspaces.prepare(ctx.run, ctx.epoch.attempt, this.options.language, this.options.readConfigMap);
    } catch (error) {
      if (!(error instanceof SourceMismatchError)) throw error;
      await this.sourceRefused(ctx, error);
      return undefined;
    }
  }

  /**
   * The snapshot is not what status.source records: Failed at once, never retried (the
   * snapshot is immutable, so another attempt reads the same bytes; running anything else
   * is what the snapshot exists to prevent).
   */
  async sourceRefused(ctx: ReconcileContext, error: SourceMismatchError): Promise<void> {
    const { epoch, log } = ctx;
    await this.cleanUp(ctx, false);
    await this.options.runs.removeFinalizer(epoch);
    const ended = await this.options.runs.transition(epoch, {
      type: 'Failed',
      reason: RUN_REASONS.sourceDigestMismatch,
      message: `attempt ${String(epoch.attempt)}: nothing ran: ${error.message}`,
    });
    log.warn(
      { reason: RUN_REASONS.sourceDigestMismatch, err: error.message, phase: ended.status?.phase },
      'source snapshot refused; nothing ran',
    );
  }

  /** RegisterFunction for this epoch: same attempt and configuration give the same ID. */
  async registerIdempotently(
    { run, epoch, log }: ReconcileContext,
    handler: string,
  ): Promise<{ registrationId: string; created: boolean }> {
    const workdir = await this.options.workspaces.prepare(run, epoch.attempt, this.options.language, this.options.readConfigMap);
    log.info({ workdir }, 'registering');
    const response = await this.options.server.register({
      runUid: epoch.uid,
      attempt: epoch.attempt,
      workdir,
      handler,
      env: runEnv(run, this.options.runtime, epoch.attempt),
    });
    this.options.metrics.registration(response.created ? 'registered' : 'reused');
    log.info(
      { registrationId: response.registrationId, created: response.created },
      response.created ? 'registered' : 'registration already existed (same attempt and configuration)',
    );
    return response;
  }

  /**
   * Releases every Pod-local thing of a Run: the registration (with `discover`, found
   * again by registering the same attempt when this process never knew its ID, e.g.
   * after a restart, if the attempt's workspace exists) and the workspace. Idempotent.
   */
  async cleanUp(ctx: ReconcileContext, discover = true): Promise<void> {
    const { key, run, epoch, log } = ctx;
    const state = this.local.get(key);
    const fn = run.spec.mode.function;
    let registrationId = state?.registrationId;
    if (
      discover &&
      registrationId === undefined &&
      fn !== undefined &&
      (await pathExists(await this.options.workspaces.attemptDir(epoch.uid, epoch.attempt)))
    ) {
      try {
        ({ registrationId } = await this.registerIdempotently(ctx, fn.handler));
      } catch (error) {
        // The code never loaded in this attempt (or its snapshot was refused): there is nothing to unregister.
        if (!isDefiniteRegistrationFailure(error) && !(error instanceof SourceMismatchError)) throw error;
      }
    }
    if (registrationId !== undefined) {
      const { found } = await this.options.server.unregister(registrationId);
      log.info({ step: 'unregistered', registrationId, found }, 'function unregistered');
      if (state !== undefined) delete state.registrationId;
    }
    if (await this.options.workspaces.remove(epoch.uid)) log.info({ step: 'workspace-removed' }, 'workspace removed');
    this.forget(key, epoch);
  }

  /**
   * This attempt failed for good: release everything it holds, then let the shared retry
   * engine decide between another attempt (back to Pending through the scheduler, so
   * capacity is free during the backoff) and Failed.
   */
  async attemptFailed(
    ctx: ReconcileContext,
    message: string,
    options: {
      exitCode?: number;
      interrupted?: boolean;
      /** Interrupted with this reason instead of OwnerLost when not retried. */
      interruptReason?: typeof RUN_REASONS.drainWindowExceeded | typeof RUN_REASONS.runtimeServerLost;
    } = {},
  ): Promise<void> {
    const { run, epoch, log } = ctx;
    const spec = plain<RunSpec>(run.spec);
    const mode = runModeKind(spec);
    // An execution cut short by the platform (runtimed restarted, the Runtime Server
    // died) may have had side effects nobody saw: like a lost owner, it is retried only
    // when the task declared retrySafe. A failure the code reported itself follows the
    // user's policy.
    const cause = options.interrupted === true || options.interruptReason !== undefined ? 'ownerLost' : 'attemptFailed';
    // Asked only where it can change the answer (like stale-recovery's lost owner): an
    // interrupted retrySafe task. An unreadable policy throws; the reconcile is retried.
    const automatic =
      cause === 'ownerLost' && mode === 'task' && spec.retryPolicy?.retrySafe === true
        ? await this.options.automaticRetryPolicy(epoch.namespace)
        : AUTOMATIC_RETRY_ALLOWED;
    const decision = decideRetry(
      mode,
      spec.retryPolicy,
      epoch.attempt,
      cause,
      retryBudgetStart(plain<RunStatus | undefined>(run.status)),
      automatic,
    );
    // Whatever this attempt registered is known here (or nothing loaded): no discovery.
    await this.cleanUp(ctx, false);
    await this.options.runs.removeFinalizer(epoch);
    if (decision.retry) {
      try {
        await this.options.runs.transition(epoch, {
          type: 'Requeue',
          cause: 'attemptFailed',
          backoffSeconds: decision.backoffSeconds,
          message: `attempt ${epoch.attempt}: ${message}`,
        });
        log.info({ nextAttempt: decision.nextAttempt, backoffSeconds: decision.backoffSeconds }, 'attempt failed; requeued');
        return;
      } catch (error) {
        // The live Run refuses another attempt: its cancel was stored meanwhile. The Failed
        // below ends it Cancelled (cancel wins) and records the exit code.
        if (!(error instanceof TransitionRefusedError && error.refusal === 'precondition')) throw error;
        log.info({ reason: error.message }, 'not requeued');
      }
    }
    // A stop the user did not ask for (the drain window ended) is never Failed, whatever is left of the budget.
    const neverFailed = options.interruptReason === RUN_REASONS.drainWindowExceeded;
    if (!decision.retry && (decision.why !== 'retriesExhausted' || neverFailed)) {
      // The execution was lost, not finished: nothing proves what the task did.
      const refused =
        decision.why === 'policyForbids'
          ? decision.policy.message
          : decision.why === 'retriesExhausted'
            ? 'no attempts left'
            : 'the task is not retrySafe';
      await this.options.runs.transition(epoch, {
        type: 'Interrupted',
        reason: options.interruptReason ?? RUN_REASONS.ownerLost,
        message: `not retried: ${refused}: ${message}`,
      });
      log.info({ why: decision.why }, 'interrupted; not retried');
      return;
    }
    const { exitCode } = options;
    const reason =
      mode === 'function' ? RUN_REASONS.registrationFailed : exitCode === undefined ? RUN_REASONS.failed : RUN_REASONS.nonZeroExit;
    const why = `attempt ${epoch.attempt} of ${resolveRetryPolicy(mode, spec.retryPolicy).maxAttempts}`;
    // With a stored cancel, the transition writes Cancelled instead (the report recorded).
    const ended = await this.options.runs.transition(epoch, {
      type: 'Failed',
      reason,
      message: `${why}: ${message}`,
      ...(exitCode === undefined ? {} : { exitCode }),
    });
    log.info({ reason, why: decision.retry ? 'cancelRequested' : decision.why, phase: ended.status?.phase }, 'ended; not retried');
  }
}
