import { DEFAULTS, RUN_REASONS, runModeKind } from '@kruntimes/api';
import type { Run, RunSpec, RuntimeLanguage } from '@kruntimes/api';
import { splitObjectKey } from '@kruntimes/controller-runtime';
import type { ReadonlyDeep, ReconcileResult } from '@kruntimes/controller-runtime';
import { runtimeServerV1 } from '@kruntimes/proto';
import { TransitionRefusedError, decideRetry, resolveRetryPolicy } from '@kruntimes/run-state';
import type { Logger } from 'pino';
import { functionEndpoint } from './endpoint.ts';
import type { RuntimedMetrics } from './metrics.ts';
import { plain, planRun, remainingIdleMs } from './plan.ts';
import type { LocalRun, RunAction } from './plan.ts';
import { NotOwnerError, StaleCacheError } from './run-client.ts';
import { ReleasedRuns } from './pod-lease.ts';
import type { LeaseRunReport } from './pod-lease.ts';
import type { Epoch } from './epoch.ts';
import type { RunClient } from './run-client.ts';
import { RuntimeServerError, isDefiniteRegistrationFailure } from './runtime-server.ts';
import type { RuntimeServerClient } from './runtime-server.ts';
import { entrypointFile, runEnv } from './workspace.ts';
import { pathExists } from '@kruntimes/host';
import type { ConfigMapReader, Workspaces } from './workspace.ts';

const { ExitReason, RegistrationState } = runtimeServerV1;

/** How often a Ready function's registration is checked (fatal errors, idle clock). */
export const FUNCTION_POLL_MS = 2_000;
/** While an invocation is in flight during deletion, look again this often. */
const IN_FLIGHT_POLL_MS = 250;
/** Look again this soon after acting on a cache that was behind the live Run. */
const STALE_CACHE_RETRY_MS = 200;
/** Far more task attempts than one Pod runs while a cache can lag behind them. */
const MAX_REMEMBERED_EXECUTIONS = 10_000;

export interface RunReconcilerOptions {
  podUID: string;
  podName: string;
  runtime: string;
  language: RuntimeLanguage;
  gatewayHost: string;
  gatewayCaPem: string | undefined;
  cancelGraceMs: number;
  /** The informer cache of the namespace's Runs. */
  cached(namespace: string, name: string): ReadonlyDeep<Run> | undefined;
  runs: RunClient;
  server: RuntimeServerClient;
  workspaces: Workspaces;
  readConfigMap: ConfigMapReader;
  logger: Logger;
  metrics: RuntimedMetrics;
  /** Re-enqueue a key (after a background execution ended). */
  enqueue(key: string): void;
  now?: () => number;
}

/** In-memory state of one Run this Pod works on. */
interface LocalState extends LocalRun {
  registrationId?: string;
  execution?: Execution;
}

interface Execution {
  id: string;
  abort: AbortController;
  /** Set by whoever stops it on purpose, so the execution's own ending writes nothing. */
  stoppedFor?: 'cancel' | 'expire' | 'release';
  done: Promise<void>;
}

/**
 * runtimed's reconciler: takes a Run key, plans one step from the cache and local state
 * (plan.ts), does it and returns. Every status write goes through the fenced RunClient;
 * a write that finds another epoch drops the work locally and never writes again.
 */
export class RunReconciler {
  readonly #o: RunReconcilerOptions;
  readonly #now: () => number;
  readonly #local = new Map<string, LocalState>();
  /**
   * Task attempts (`uid/attempt`) this process started: an attempt runs at most once per
   * process, whatever a lagging cache says afterwards (across restarts the attempt's
   * workspace is the marker). Bounded; insertion order makes it a FIFO.
   */
  readonly #executed = new Set<string>();
  /** Epochs whose Pod-local state this process confirmed stopped (reported in the Pod Lease). */
  readonly #released = new ReleasedRuns();

  constructor(options: RunReconcilerOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    options.metrics.observeActiveFunctions(() => [...this.#local.values()].filter((s) => s.registrationId !== undefined).length);
  }

  /**
   * The registration this process holds for exactly this Run UID and attempt, if any:
   * the dataplane invokes locally only with it (a read-only view of local state).
   */
  registrationFor(uid: string, attempt: number): string | undefined {
    for (const state of this.#local.values()) {
      if (state.uid === uid && state.attempt === attempt && state.mode === 'function') return state.registrationId;
    }
    return undefined;
  }

  /** Keys of the Runs this process holds local state for. */
  localKeys(): string[] {
    return [...this.#local.keys()];
  }

  /** Keys of the function Runs whose registration this process holds (their per-function metrics are exported). */
  heldFunctionKeys(): string[] {
    return [...this.#local].filter(([, state]) => state.mode === 'function' && state.registrationId !== undefined).map(([key]) => key);
  }

  readonly reconcile = async (key: string, _signal?: AbortSignal): Promise<ReconcileResult | undefined> => {
    const { namespace = '', name } = splitObjectKey(key);
    const run = this.#o.cached(namespace, name);
    const local = this.#local.get(key);
    const action = planRun({ run, podUID: this.#o.podUID, runtime: this.#o.runtime, local, nowMs: this.#now() });
    if (action.type === 'ignore') return undefined;
    if (action.type === 'release' || run === undefined) {
      await this.#release(key, action.type === 'release' ? action.why : 'the Run is gone');
      return undefined;
    }
    const epoch: Epoch = {
      namespace,
      name,
      uid: run.metadata.uid ?? '',
      attempt: run.status?.attempt ?? 0,
      podUID: this.#o.podUID,
    };
    const log = this.#o.logger.child({ run: key, runUID: epoch.uid, attempt: epoch.attempt });
    try {
      return await this.#act(action, key, run, epoch, log);
    } catch (error) {
      if (error instanceof NotOwnerError) {
        log.info({ reason: error.message }, 'no longer the owner; dropping the Run locally');
        await this.#release(key, error.message);
        return undefined;
      }
      // The cache lagged behind the live Run: nothing was done, and the watch event that
      // brings the new state enqueues the key again (the requeue covers a lost event).
      if (error instanceof StaleCacheError || (error instanceof TransitionRefusedError && error.refusal === 'wrongPhase')) {
        log.debug({ reason: error.message }, 'the cache is behind the live Run; trying again');
        return { requeueAfterMs: STALE_CACHE_RETRY_MS };
      }
      throw error;
    }
  };

  async #act(
    action: Exclude<RunAction, { type: 'ignore' | 'release' }>,
    key: string,
    run: ReadonlyDeep<Run>,
    epoch: Epoch,
    log: Logger,
  ): Promise<ReconcileResult | undefined> {
    switch (action.type) {
      case 'claim': {
        const claimed = await this.#o.runs.transition(epoch, { type: 'Claim' });
        log.info({ mode: runModeKind(plain<RunSpec>(run.spec)) }, 'claimed');
        // Go on from the object just written instead of waiting for its watch event
        // (safe: every step re-checks the live Run before it creates anything).
        const next = planRun({
          run: claimed,
          podUID: this.#o.podUID,
          runtime: this.#o.runtime,
          local: this.#local.get(key),
          nowMs: this.#now(),
        });
        return next.type === 'register' || next.type === 'execute' ? this.#act(next, key, claimed, epoch, log) : undefined;
      }
      case 'register':
        return this.#register(key, run, epoch, log);
      case 'watch':
        return this.#watch(key, run, epoch, log, action.lifetimeRemainingMs);
      case 'execute':
        return this.#execute(key, run, epoch, log, action.lifetimeRemainingMs);
      case 'cancel':
        await this.#stop(key, run, epoch, log, 'cancel');
        await this.#o.runs.transition(epoch, { type: 'Cancelled', message: 'cancelled by request; the work was stopped and cleaned up' });
        log.info('cancelled');
        return undefined;
      case 'expire':
        await this.#stop(key, run, epoch, log, 'expire');
        await this.#o.runs.transition(epoch, {
          type: 'TimedOut',
          reason: RUN_REASONS.timeout,
          message: `ran longer than spec.timeout (${run.spec.timeout ?? ''}) since startTime`,
        });
        log.info('lifetime timeout');
        return undefined;
      case 'finalize':
        return this.#finalize(key, run, epoch, log);
      case 'removeFinalizer':
        await this.#cleanUp(key, run, epoch, log);
        await this.#o.runs.removeFinalizer(epoch);
        log.info('finalizer removed after the terminal status');
        return undefined;
    }
  }

  // ------------------------------------------------------------------ functions

  async #register(key: string, run: ReadonlyDeep<Run>, epoch: Epoch, log: Logger): Promise<ReconcileResult | undefined> {
    const fn = run.spec.mode.function;
    if (fn === undefined) return undefined;
    // The finalizer first: from now on Pod-local state may exist, and deleting the Run
    // object must wait for runtimed to release it.
    await this.#o.runs.addFinalizer(epoch, ['Running']);
    const state = this.#track(key, epoch, 'function');
    let registrationId: string;
    try {
      ({ registrationId } = await this.#registerIdempotently(run, epoch, fn.handler, log));
    } catch (error) {
      if (!isDefiniteRegistrationFailure(error)) {
        // Unknown outcome (server unreachable, deadline): retried with the same attempt,
        // which the Runtime Server answers with the same registration if it took effect.
        this.#o.metrics.registration('indeterminate');
        throw error;
      }
      this.#o.metrics.registration('failed');
      log.warn({ code: error.code, err: error.message }, 'registration failed');
      await this.#attemptFailed(key, run, epoch, log, `registration failed: ${error.message}`);
      return undefined;
    }
    state.registrationId = registrationId;
    const endpoint = functionEndpoint(
      this.#o.gatewayHost,
      { namespace: epoch.namespace, runtime: this.#o.runtime, runUID: epoch.uid },
      this.#o.gatewayCaPem,
    );
    await this.#o.runs.transition(epoch, { type: 'Registered', endpoint });
    log.info({ endpoint: endpoint.url }, 'function registered; Ready');
    return { requeueAfterMs: FUNCTION_POLL_MS };
  }

  /** RegisterFunction for this epoch: same attempt and configuration give the same ID. */
  async #registerIdempotently(
    run: ReadonlyDeep<Run>,
    epoch: Epoch,
    handler: string,
    log: Logger,
  ): Promise<{ registrationId: string; created: boolean }> {
    const workdir = await this.#o.workspaces.prepare(run, epoch.attempt, this.#o.language, this.#o.readConfigMap);
    log.info({ workdir }, 'registering');
    const response = await this.#o.server.register({
      runUid: epoch.uid,
      attempt: epoch.attempt,
      workdir,
      handler,
      env: runEnv(run, this.#o.runtime, epoch.attempt),
    });
    this.#o.metrics.registration(response.created ? 'registered' : 'reused');
    log.info(
      { registrationId: response.registrationId, created: response.created },
      response.created ? 'registered' : 'registration already existed (same attempt and configuration)',
    );
    return response;
  }

  async #watch(
    key: string,
    run: ReadonlyDeep<Run>,
    epoch: Epoch,
    log: Logger,
    lifetimeRemainingMs: number | undefined,
  ): Promise<ReconcileResult | undefined> {
    const fn = run.spec.mode.function;
    if (fn === undefined) return undefined;
    const state = this.#track(key, epoch, 'function');
    // After a restart runtimed knows no ID: registering the same attempt with the same
    // configuration returns the one the Runtime Server holds (nothing registered twice).
    if (state.registrationId === undefined) {
      await this.#o.runs.verify(epoch, ['Ready']);
      const { registrationId, created } = await this.#registerIdempotently(run, epoch, fn.handler, log);
      state.registrationId = registrationId;
      // Created anew means the Runtime Server had lost the one that became Ready (it
      // restarted): module state and idle clock are gone, so that epoch is over.
      if (created) return this.#registrationLost(key, run, epoch, log, 'the Runtime Server no longer held the registration (it restarted)');
    }
    let status: runtimeServerV1.FunctionStatusResponse;
    try {
      status = await this.#o.server.status(state.registrationId);
    } catch (error) {
      if (error instanceof RuntimeServerError && error.code === 'RegistrationNotFound') {
        delete state.registrationId;
        return this.#registrationLost(key, run, epoch, log, 'the Runtime Server no longer holds the registration (it restarted)');
      }
      throw error;
    }
    if (status.state === RegistrationState.REGISTRATION_STATE_FAILED) {
      return this.#registrationLost(
        key,
        run,
        epoch,
        log,
        `the registration failed: ${status.fatalError?.message ?? 'fatal Runtime Server error'}`,
      );
    }
    const idleRemainingMs = remainingIdleMs(fn.idleTimeoutSeconds, status.lastActivity, status.inFlight, this.#now());
    if (idleRemainingMs !== undefined && idleRemainingMs <= 0) {
      await this.#stop(key, run, epoch, log, 'expire');
      await this.#o.runs.transition(epoch, {
        type: 'TimedOut',
        reason: RUN_REASONS.idleTimeout,
        message: `no invocation for ${fn.idleTimeoutSeconds ?? 0}s (mode.function.idleTimeoutSeconds)`,
      });
      log.info('idle timeout');
      return undefined;
    }
    return { requeueAfterMs: Math.max(0, Math.min(FUNCTION_POLL_MS, idleRemainingMs ?? Infinity, lifetimeRemainingMs ?? Infinity)) };
  }

  /**
   * The registration that made the Run Ready is gone: the Run stops being ready
   * (Ready=False, RegistrationLost) and registration recovery starts a new attempt
   * through the shared retry engine (registration is always safe to retry).
   */
  async #registrationLost(key: string, run: ReadonlyDeep<Run>, epoch: Epoch, log: Logger, why: string): Promise<undefined> {
    log.warn({ why }, 'registration lost; recovering');
    await this.#o.runs.transition(epoch, { type: 'RegistrationLost', message: why });
    await this.#attemptFailed(key, run, epoch, log, why);
    return undefined;
  }

  /**
   * This attempt failed for good: release everything it holds, then let the shared retry
   * engine decide between another attempt (back to Pending through the scheduler, so
   * capacity is free during the backoff) and Failed.
   */
  async #attemptFailed(
    key: string,
    run: ReadonlyDeep<Run>,
    epoch: Epoch,
    log: Logger,
    message: string,
    options: { exitCode?: number; interrupted?: boolean } = {},
  ): Promise<void> {
    const spec = plain<RunSpec>(run.spec);
    const mode = runModeKind(spec);
    // An execution cut short by the platform (runtimed restarted, the Runtime Server
    // died) may have had side effects nobody saw: like a lost owner, it is retried only
    // when the task declared retrySafe. A failure the code reported itself follows the
    // user's policy.
    const decision = decideRetry(mode, spec.retryPolicy, epoch.attempt, options.interrupted === true ? 'ownerLost' : 'attemptFailed');
    // Whatever this attempt registered is known here (or nothing loaded): no discovery.
    await this.#cleanUp(key, run, epoch, log, false);
    await this.#o.runs.removeFinalizer(epoch);
    if (decision.retry) {
      await this.#o.runs.transition(epoch, {
        type: 'Requeue',
        cause: 'attemptFailed',
        backoffSeconds: decision.backoffSeconds,
        message: `attempt ${epoch.attempt}: ${message}`,
      });
      log.info({ nextAttempt: decision.nextAttempt, backoffSeconds: decision.backoffSeconds }, 'attempt failed; requeued');
      return;
    }
    if (decision.why === 'notRetrySafe') {
      // The execution was lost, not finished: nothing proves what the task did.
      await this.#o.runs.transition(epoch, {
        type: 'Interrupted',
        reason: RUN_REASONS.ownerLost,
        message: `not retried: the task is not retrySafe: ${message}`,
      });
      log.info({ why: decision.why }, 'interrupted; not retried');
      return;
    }
    const { exitCode } = options;
    const reason =
      mode === 'function' ? RUN_REASONS.registrationFailed : exitCode === undefined ? RUN_REASONS.failed : RUN_REASONS.nonZeroExit;
    const why = `attempt ${epoch.attempt} of ${resolveRetryPolicy(spec.retryPolicy).maxAttempts}`;
    await this.#o.runs.transition(epoch, {
      type: 'Failed',
      reason,
      message: `${why}: ${message}`,
      ...(exitCode === undefined ? {} : { exitCode }),
    });
    log.info({ reason, why: decision.why }, 'failed; not retried');
  }

  /**
   * Deletion of a function Run, in the order of the design: stop accepting invokes (the
   * Run is deleting, so the dataplane refuses it), wait for the bounded in-flight
   * invocation, UnregisterFunction, delete the workspace, then release the finalizer
   * (which is what releases the capacity unit).
   */
  async #finalize(key: string, run: ReadonlyDeep<Run>, epoch: Epoch, log: Logger): Promise<ReconcileResult | undefined> {
    const state = this.#local.get(key);
    const fn = run.spec.mode.function;
    if (state?.registrationId !== undefined && fn !== undefined) {
      const inFlight = await this.#inFlight(state.registrationId);
      const waitUntil =
        Date.parse(run.metadata.deletionTimestamp ?? '') + (fn.invocationTimeoutSeconds ?? DEFAULTS.invocationTimeoutSeconds) * 1000;
      if (inFlight > 0 && this.#now() < waitUntil) {
        log.info({ inFlight }, 'deleting: waiting for the in-flight invocation');
        return { requeueAfterMs: IN_FLIGHT_POLL_MS };
      }
    }
    await this.#cleanUp(key, run, epoch, log);
    // A reconcile from a cache that has not yet seen the removal repeats the (idempotent)
    // cleanup; only what was actually done is logged as a step.
    if (await this.#o.runs.removeFinalizer(epoch)) log.info({ step: 'finalizer-removed' }, 'deleting: finalizer removed');
    return undefined;
  }

  async #inFlight(registrationId: string): Promise<number> {
    try {
      return (await this.#o.server.status(registrationId)).inFlight;
    } catch (error) {
      if (error instanceof RuntimeServerError && error.code === 'RegistrationNotFound') return 0;
      throw error;
    }
  }

  // ------------------------------------------------------------------ tasks

  async #execute(
    key: string,
    run: ReadonlyDeep<Run>,
    epoch: Epoch,
    log: Logger,
    lifetimeRemainingMs: number | undefined,
  ): Promise<ReconcileResult | undefined> {
    const existing = this.#local.get(key);
    if (existing?.execution !== undefined) {
      return lifetimeRemainingMs === undefined ? undefined : { requeueAfterMs: Math.max(0, lifetimeRemainingMs) };
    }
    const executionId = `${epoch.uid}/${epoch.attempt}`;
    if (this.#executed.has(executionId)) return undefined;
    // The cache may lag: an execution that just ended and wrote its outcome would
    // otherwise look like a Running task that still has to run.
    await this.#o.runs.verify(epoch, ['Running']);
    const attemptDir = await this.#o.workspaces.attemptDir(epoch.uid, epoch.attempt);
    if (await pathExists(attemptDir)) {
      // This attempt's workspace exists but no execution does: runtimed restarted while
      // it ran, and the Runtime Server stopped it when runtimed's stream closed. What it
      // did is unknown, so the attempt failed (retried only within the user's policy).
      await this.#attemptFailed(key, run, epoch, log, 'runtimed restarted during the execution, which the Runtime Server then stopped', {
        interrupted: true,
      });
      return undefined;
    }
    const workdir = await this.#o.workspaces.prepare(run, epoch.attempt, this.#o.language, this.#o.readConfigMap);
    const state = this.#track(key, epoch, 'task');
    this.#rememberExecuted(executionId);
    const execution: Execution = { id: executionId, abort: new AbortController(), done: Promise.resolve() };
    state.execution = execution;
    execution.done = this.#runExecution(key, run, epoch, log, workdir, execution, lifetimeRemainingMs);
    return undefined;
  }

  /** Runs in the background (not in a reconcile worker): a task may run for hours. */
  async #runExecution(
    key: string,
    run: ReadonlyDeep<Run>,
    epoch: Epoch,
    log: Logger,
    workdir: string,
    execution: Execution,
    lifetimeRemainingMs: number | undefined,
  ): Promise<void> {
    const started = this.#now();
    let exited: runtimeServerV1.ExecutionExited | undefined;
    let failure: unknown;
    try {
      const events = this.#o.server.execute(
        {
          executionId: execution.id,
          runUid: epoch.uid,
          attempt: epoch.attempt,
          workdir,
          entrypoint: entrypointFile(this.#o.language),
          args: [...(run.spec.mode.task?.args ?? [])],
          env: runEnv(run, this.#o.runtime, epoch.attempt),
          timeoutMs: lifetimeRemainingMs,
          gracePeriodMs: this.#o.cancelGraceMs,
        },
        execution.abort.signal,
      );
      for await (const { event } of events) {
        switch (event?.$case) {
          case 'started':
            log.info({ pid: event.started.pid }, 'task started');
            break;
          case 'log':
            // The task's output goes to structured logs, never into Run status.
            log.info(
              {
                stream: event.log.stream === runtimeServerV1.LogStream.LOG_STREAM_STDERR ? 'stderr' : 'stdout',
                line: event.log.text,
                truncated: event.log.truncated || undefined,
              },
              'task output',
            );
            break;
          case 'exited':
            exited = event.exited;
            break;
          case undefined:
            break;
        }
      }
    } catch (error) {
      failure = error;
    }
    const seconds = (this.#now() - started) / 1000;
    try {
      if (execution.stoppedFor !== undefined) {
        // Whoever stopped it writes the outcome (Cancelled, Timeout) or nothing (released).
        this.#o.metrics.taskFinished(
          execution.stoppedFor === 'cancel' ? 'cancelled' : execution.stoppedFor === 'expire' ? 'timeout' : 'released',
          seconds,
        );
        return;
      }
      await this.#taskEnded(key, run, epoch, log, exited, failure, seconds);
    } catch (error) {
      if (error instanceof NotOwnerError || error instanceof TransitionRefusedError) {
        log.info({ reason: error.message }, 'task outcome not written: the Run moved on');
      } else {
        // The reconcile that follows re-reads everything and retries the write.
        log.error({ err: error }, 'writing the task outcome failed');
      }
    } finally {
      const current = this.#local.get(key);
      if (current?.execution === execution) delete current.execution;
      this.#o.enqueue(key);
    }
  }

  async #taskEnded(
    key: string,
    run: ReadonlyDeep<Run>,
    epoch: Epoch,
    log: Logger,
    exited: runtimeServerV1.ExecutionExited | undefined,
    failure: unknown,
    seconds: number,
  ): Promise<void> {
    if (exited === undefined) {
      log.warn({ err: failure }, 'the execution stream ended without an exit');
      this.#o.metrics.taskFinished('failed', seconds);
      await this.#attemptFailed(
        key,
        run,
        epoch,
        log,
        `lost the execution: ${failure instanceof Error ? failure.message : 'no exit event'}`,
        { interrupted: true },
      );
      return;
    }
    log.info(
      {
        reason: exited.reason,
        exitCode: exited.exitCode,
        signal: exited.signal || undefined,
        outputsError: exited.outputsError || undefined,
        seconds,
      },
      'task exited',
    );
    switch (exited.reason) {
      case ExitReason.EXIT_REASON_COMPLETED:
        if (exited.exitCode === 0) {
          this.#o.metrics.taskFinished('succeeded', seconds);
          await this.#o.workspaces.remove(epoch.uid);
          await this.#o.runs.transition(epoch, { type: 'Succeeded', outputs: { ...exited.outputs } });
          this.#local.delete(key);
          this.#released.add(epoch);
          log.info('succeeded');
          return;
        }
        this.#o.metrics.taskFinished('failed', seconds);
        await this.#attemptFailed(key, run, epoch, log, `exited with code ${exited.exitCode}`, { exitCode: exited.exitCode });
        return;
      case ExitReason.EXIT_REASON_TIMED_OUT:
        this.#o.metrics.taskFinished('timeout', seconds);
        await this.#o.workspaces.remove(epoch.uid);
        await this.#o.runs.transition(epoch, {
          type: 'TimedOut',
          reason: RUN_REASONS.timeout,
          message: `ran longer than spec.timeout (${run.spec.timeout ?? ''}) since startTime`,
        });
        this.#local.delete(key);
        this.#released.add(epoch);
        return;
      case ExitReason.EXIT_REASON_START_FAILED:
        this.#o.metrics.taskFinished('failed', seconds);
        await this.#attemptFailed(key, run, epoch, log, `could not start: ${exited.message}`);
        return;
      case ExitReason.EXIT_REASON_CANCELLED:
      case ExitReason.EXIT_REASON_UNSPECIFIED:
      case ExitReason.UNRECOGNIZED:
        this.#o.metrics.taskFinished('failed', seconds);
        await this.#attemptFailed(key, run, epoch, log, `the execution ended unexpectedly (${exited.message || String(exited.reason)})`, {
          interrupted: true,
        });
        return;
    }
  }

  // ------------------------------------------------------------------ shared

  /** Stops this epoch's work (task: SIGTERM, grace, SIGKILL; function: unregister) and cleans up. */
  async #stop(key: string, run: ReadonlyDeep<Run>, epoch: Epoch, log: Logger, why: 'cancel' | 'expire'): Promise<void> {
    const execution = this.#local.get(key)?.execution;
    if (execution !== undefined) {
      execution.stoppedFor = why;
      const { found } = await this.#o.server.cancel(execution.id, this.#o.cancelGraceMs);
      log.info({ found }, 'stopping the task');
      await execution.done;
    }
    await this.#cleanUp(key, run, epoch, log);
    await this.#o.runs.removeFinalizer(epoch);
  }

  /**
   * Releases every Pod-local thing of a Run: the registration (with `discover`, found
   * again by registering the same attempt when this process never knew its ID, e.g.
   * after a restart, if the attempt's workspace exists) and the workspace. Idempotent.
   */
  async #cleanUp(key: string, run: ReadonlyDeep<Run>, epoch: Epoch, log: Logger, discover = true): Promise<void> {
    const state = this.#local.get(key);
    const fn = run.spec.mode.function;
    let registrationId = state?.registrationId;
    if (
      discover &&
      registrationId === undefined &&
      fn !== undefined &&
      (await pathExists(await this.#o.workspaces.attemptDir(epoch.uid, epoch.attempt)))
    ) {
      try {
        ({ registrationId } = await this.#registerIdempotently(run, epoch, fn.handler, log));
      } catch (error) {
        // The code never loaded in this attempt: there is nothing to unregister.
        if (!isDefiniteRegistrationFailure(error)) throw error;
      }
    }
    if (registrationId !== undefined) {
      const { found } = await this.#o.server.unregister(registrationId);
      log.info({ step: 'unregistered', registrationId, found }, 'function unregistered');
      if (state !== undefined) delete state.registrationId;
    }
    if (await this.#o.workspaces.remove(epoch.uid)) log.info({ step: 'workspace-removed' }, 'workspace removed');
    this.#local.delete(key);
    this.#released.add(epoch);
  }

  /** Drops local work for a Run this Pod no longer owns. Writes nothing to the Run. */
  async #release(key: string, why: string): Promise<void> {
    const state = this.#local.get(key);
    if (state === undefined) return;
    const log = this.#o.logger.child({ run: key, runUID: state.uid, attempt: state.attempt });
    if (state.execution !== undefined) {
      state.execution.stoppedFor = 'release';
      state.execution.abort.abort();
      await state.execution.done;
    }
    if (state.registrationId !== undefined) {
      const { found } = await this.#o.server.unregister(state.registrationId);
      log.info({ registrationId: state.registrationId, found }, 'function unregistered (released)');
    }
    await this.#o.workspaces.remove(state.uid);
    this.#local.delete(key);
    this.#released.add(state);
    log.info({ why }, 'released the Run locally');
  }

  #rememberExecuted(executionId: string): void {
    this.#executed.add(executionId);
    if (this.#executed.size > MAX_REMEMBERED_EXECUTIONS) {
      const oldest = this.#executed.values().next();
      if (oldest.done !== true) this.#executed.delete(oldest.value);
    }
  }

  #track(key: string, epoch: Epoch, mode: 'task' | 'function'): LocalState {
    let state = this.#local.get(key);
    if (state === undefined) {
      state = { uid: epoch.uid, attempt: epoch.attempt, mode };
      this.#local.set(key, state);
    }
    return state;
  }

  /** For the Pod Lease: the epochs held now and those confirmed released (stale-recovery reads them). */
  leaseReport(): LeaseRunReport {
    return { held: [...this.#local.values()].map(({ uid, attempt }) => ({ uid, attempt })), released: this.#released.list() };
  }

  /** Stops every execution (runtimed is shutting down; the Runtime Server ends them too). */
  async shutdown(): Promise<void> {
    const executions = [...this.#local.values()].flatMap((s) => (s.execution === undefined ? [] : [s.execution]));
    for (const execution of executions) {
      execution.stoppedFor = 'release';
      execution.abort.abort();
    }
    await Promise.all(executions.map((e) => e.done));
  }
}
