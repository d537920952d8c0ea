import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULTS, EVENT_REASONS, RUN_REASONS, runModeKind } from '@kruntimes/api';
import type { RunSpec } from '@kruntimes/api';
import { objectKey, splitObjectKey } from '@kruntimes/controller-runtime';
import type { ReconcileResult } from '@kruntimes/controller-runtime';
import { TransitionRefusedError } from '@kruntimes/run-state';
import { ClaimSlots } from './claim-slots.ts';
import type { ClaimDecision, SlotRun } from './claim-slots.ts';
import { claimGate, decideDrainStep, drainFrom } from './drain.ts';
import type { ClaimGate, Drain, PodStop } from './drain.ts';
import type { Epoch } from './epoch.ts';
import { FunctionLifecycle } from './function-lifecycle.ts';
import { letWaitingExecutionEnd } from './input-wait.ts';
import { plain, planRun } from './plan.ts';
import type { RunAction } from './plan.ts';
import { ReleasedRuns } from './pod-lease.ts';
import type { LeaseRunReport } from './pod-lease.ts';
import { NotOwnerError, StaleCacheError } from './run-client.ts';
import { RunWork } from './run-work.ts';
import type { LocalState, ReconcileContext } from './run-work.ts';
import type { Registrations } from './dataplane/registrations.ts';
import type { RunReconcilerOptions } from './reconcile-types.ts';
import { RuntimeServerError } from './runtime-server.ts';
import { TaskExecution } from './task-execution.ts';

export { FUNCTION_POLL_MS } from './function-lifecycle.ts';
export type { RunReconcilerOptions } from './reconcile-types.ts';

/** On top of the cancel grace: how long an execution that waits for input gets to end on its own when released. */
const WAITING_END_MARGIN_MS = 5_000;

/** Look again this soon after acting on a cache that was behind the live Run. */
const STALE_CACHE_RETRY_MS = 200;

/** While draining, how often runtimed looks whether it still holds anything. */
const DRAIN_POLL_MS = 100;
/** Past the drain window and the cancel grace: how long the last stops and writes may take before runtimed exits anyway. */
const DRAIN_END_MARGIN_MS = 15_000;

/** The task steps the reconciler hands its actions to (TaskExecution's). */
export type TaskSteps = Pick<TaskExecution, 'execute' | 'writeOutcome' | 'stop' | 'outcomeUnwritten' | 'dropRecordsOfGoneRuns'>;
/** The function steps the reconciler hands its actions to (FunctionLifecycle's). */
export type FunctionSteps = Pick<FunctionLifecycle, 'register' | 'watch' | 'finalize'>;

/** Both modes' steps, built on the reconciler's shared work (a table test passes fakes). */
export interface RunSteps {
  tasks: TaskSteps;
  functions: FunctionSteps;
}

/** The real steps: a function Run is stopped the way a task is (cleanup, then the finalizer). */
function runSteps(work: RunWork): RunSteps {
  const tasks = new TaskExecution(work);
  return { tasks, functions: new FunctionLifecycle(work, tasks.stop) };
}

/** The key of one epoch (Run UID and attempt) in the drain's maps. */
function epochKeyOf(uid: string, attempt: number): string {
  return `${uid}/${String(attempt)}`;
}

/**
 * runtimed's reconciler: takes a Run key, plans one step from the cache and local state
 * (plan.ts), does it and returns. Every status write goes through the fenced RunClient;
 * a write that finds another epoch drops the work locally and never writes again. The
 * steps of each mode are in function-lifecycle.ts and task-execution.ts.
 */
export class RunReconciler implements Registrations {
  readonly #options: RunReconcilerOptions;
  readonly #now: () => number;
  readonly #local = new Map<string, LocalState>();
  /** Epochs whose Pod-local state this process confirmed stopped (reported in the Pod Lease). */
  readonly #released = new ReleasedRuns();
  readonly #work: RunWork;
  readonly #functions: FunctionSteps;
  readonly #tasks: TaskSteps;
  /** The claims in flight and the capacity check in front of each claim. */
  readonly #slots: ClaimSlots;
  /** Whether this Pod is stopping or marked for scale-down: then it takes no claim. */
  readonly #podStop: PodStop = { stopping: false, scaleDown: false };
  /** Set from SIGTERM on: the drain window. */
  #drain: Drain | undefined;
  /** Epochs being handed over (they take no new invocation), with when that began. */
  readonly #moving = new Map<string, number>();
  /** Local invocations in flight per epoch, admitted by the dataplane. */
  readonly #invocations = new Map<string, number>();

  constructor(options: RunReconcilerOptions, steps: (work: RunWork) => RunSteps = runSteps) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#slots = new ClaimSlots(options.podUID, options.podName, options.runsPerPod);
    this.#work = new RunWork({ options, now: this.#now, local: this.#local, released: this.#released });
    ({ tasks: this.#tasks, functions: this.#functions } = steps(this.#work));
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

  /**
   * Admits one local invocation of an epoch (the dataplane calls the release when it
   * ended), or none once the epoch is being handed over: the handover waits for every
   * invocation admitted before, and no invocation starts after it began.
   */
  admitInvocation(uid: string, attempt: number): (() => void) | undefined {
    const key = epochKeyOf(uid, attempt);
    if (this.#moving.has(key)) return undefined;
    this.#invocations.set(key, (this.#invocations.get(key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#invocations.get(key) ?? 1) - 1;
      if (left > 0) this.#invocations.set(key, left);
      else this.#invocations.delete(key);
    };
  }

  /** Whether this Pod takes claims now (not stopping, not marked for scale-down). */
  claimGate(): ClaimGate {
    return claimGate(this.#podStop, this.#options.podName);
  }

  /**
   * What the Pod cache says of this Pod: marked for scale-down (claims stop; they start
   * again if the mark goes), or deleting (claims stop for good; SIGTERM starts the drain).
   */
  observeOwnPod(pod: { scaleDown: boolean; deleting: boolean }): void {
    if (pod.scaleDown !== this.#podStop.scaleDown) {
      this.#options.logger.info(
        { scaleDown: pod.scaleDown },
        pod.scaleDown ? 'marked for scale-down: taking no claims' : 'scale-down mark removed: taking claims again',
      );
    }
    this.#podStop.scaleDown = pod.scaleDown;
    if (pod.deleting && !this.#podStop.stopping) {
      this.#podStop.stopping = true;
      this.#options.logger.info('the Pod is deleting: taking no claims');
    }
  }

  /**
   * The drain (docs/operations.md "Drain"), from SIGTERM: no claim is taken (Runs bound
   * here go back, PodDraining), every function Run is handed over (its in-flight
   * invocations first), tasks run on within the window of `drainSeconds`, then the ones
   * left are stopped and end Interrupted (DrainWindowExceeded) or are retried under the
   * retry rules. Resolves when this process holds nothing, or at the end of the window
   * plus the cancel grace and a margin.
   */
  async drain(namespace: string, drainSeconds: number): Promise<void> {
    this.#podStop.stopping = true;
    const drain = (this.#drain ??= drainFrom(this.#now(), drainSeconds));
    const log = this.#options.logger;
    log.info({ drainSeconds, held: this.#local.size }, 'draining: no new claims; handing function Runs over, letting tasks finish');
    // Everything held here, and every Run bound here but not claimed yet (it is given back).
    const keys = new Set(this.#local.keys());
    for (const run of this.#options.cachedRuns(namespace)) {
      if (run.status?.assignedPodUID === this.#options.podUID) keys.add(objectKey(run));
    }
    for (const key of keys) this.#options.enqueue(key);
    // At the end of the window the tasks still running are stopped by their next reconcile.
    const windowEnd = setTimeout(
      () => {
        for (const key of this.#local.keys()) this.#options.enqueue(key);
      },
      Math.max(0, drain.deadlineMs - this.#now()),
    );
    windowEnd.unref();
    const giveUpAt = drain.deadlineMs + this.#options.cancelGraceMs + DRAIN_END_MARGIN_MS;
    try {
      // A handover unregisters (and forgets the local state) before its status write: it is done once written.
      while ((this.#local.size > 0 || this.#moving.size > 0) && this.#now() < giveUpAt) await sleep(DRAIN_POLL_MS);
    } finally {
      clearTimeout(windowEnd);
    }
    if (this.#local.size > 0 || this.#moving.size > 0) {
      log.warn({ left: this.localKeys(), moving: [...this.#moving.keys()] }, 'drain ended with Runs still held here');
    } else log.info({ seconds: (this.#now() - drain.sinceMs) / 1000 }, 'drained: nothing is held here any more');
  }

  /**
   * Once the Run cache of `namespace` has synced after a start: drops the outcome records
   * of Runs deleted meanwhile (no reconcile comes for them). Those of other Runs are
   * decided by their reconciles.
   */
  async dropOutcomeRecordsOfGoneRuns(namespace: string): Promise<void> {
    await this.#tasks.dropRecordsOfGoneRuns(namespace);
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
    const run = this.#options.cached(namespace, name);
    const local = this.#local.get(key);
    if (run === undefined) await this.#tasks.dropRecordsOfGoneRuns(namespace);
    const outcomeUnwritten = run !== undefined && (await this.#tasks.outcomeUnwritten(key, run));
    const action = planRun({
      run,
      podUID: this.#options.podUID,
      runtime: this.#options.runtime,
      local,
      outcomeUnwritten,
      nowMs: this.#now(),
    });
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
      podUID: this.#options.podUID,
    };
    const log = this.#options.logger.child({ run: key, runUID: epoch.uid, attempt: epoch.attempt });
    try {
      const ctx = { key, run, epoch, log };
      if (this.#drain !== undefined) {
        const drained = await this.#drainStep(action, ctx, this.#drain);
        if (drained !== 'asPlanned') return drained;
      }
      return await this.#act(action, ctx);
    } catch (error) {
      if (error instanceof NotOwnerError) {
        log.info({ reason: error.message }, 'no longer the owner; dropping the Run locally');
        // Nothing of this epoch is left to hand over.
        this.#moving.delete(epochKeyOf(epoch.uid, epoch.attempt));
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

  async #act(action: Exclude<RunAction, { type: 'ignore' | 'release' }>, ctx: ReconcileContext): Promise<ReconcileResult | undefined> {
    const { run, epoch, log } = ctx;
    switch (action.type) {
      case 'claim':
        return this.#claim(ctx);
      case 'register':
        return this.#functions.register(ctx);
      case 'watch':
        return this.#functions.watch(ctx, action.lifetimeRemainingMs);
      case 'execute':
        return this.#tasks.execute(ctx, action.lifetimeRemainingMs);
      case 'writeOutcome':
        return this.#tasks.writeOutcome(ctx);
      case 'cancel': {
        // Cancelling first, so that kubectl and krt show the stop while it lasts (up to the grace period).
        const accept = async (): Promise<void> => {
          if (run.status?.reason === RUN_REASONS.cancelling) return;
          await this.#options.runs.transition(epoch, {
            type: 'CancelAccepted',
            message:
              run.spec.mode.task !== undefined
                ? `cancel requested; stopping the task (SIGTERM, SIGKILL after ${this.#options.cancelGraceMs / 1000} s)`
                : 'cancel requested; unregistering the function',
          });
          log.info('cancelling');
        };
        const exited = await this.#tasks.stop(ctx, 'cancel', accept);
        // A task that handled SIGTERM and exited on its own has an exit code worth recording.
        const exitCode = exited?.signal === '' && exited.exitCode >= 0 ? exited.exitCode : undefined;
        await this.#options.runs.transition(epoch, {
          type: 'Cancelled',
          message: `cancelled by request; the work was stopped and cleaned up${
            exited === undefined
              ? ''
              : exitCode === undefined
                ? ` (the task ended by ${exited.signal || 'a signal'})`
                : ` (the task exited ${exitCode})`
          }`,
          ...(exitCode === undefined ? {} : { exitCode }),
        });
        log.info({ exitCode }, 'cancelled');
        return undefined;
      }
      case 'expire':
        await this.#tasks.stop(ctx, 'expire');
        await this.#options.runs.transition(epoch, {
          type: 'TimedOut',
          reason: RUN_REASONS.timeout,
          message: `ran longer than spec.timeout (${run.spec.timeout ?? ''}) since startTime`,
        });
        log.info('lifetime timeout');
        return undefined;
      case 'finalize':
        return this.#functions.finalize(ctx);
      case 'removeFinalizer':
        await this.#work.cleanUp(ctx);
        await this.#options.runs.removeFinalizer(epoch);
        log.info('finalizer removed after the terminal status');
        return undefined;
    }
  }

  /** A Run's step while the Pod drains: 'asPlanned' lets planRun's action go ahead. */
  async #drainStep(
    action: Exclude<RunAction, { type: 'ignore' | 'release' }>,
    ctx: ReconcileContext,
    drain: Drain,
  ): Promise<ReconcileResult | undefined | 'asPlanned'> {
    const { uid, attempt } = ctx.epoch;
    const key = epochKeyOf(uid, attempt);
    const isFunction = action.type === 'register' || action.type === 'watch';
    let movingSinceMs: number | undefined;
    let inFlight = 0;
    if (isFunction) {
      movingSinceMs = this.#moving.get(key) ?? this.#now();
      // From here on the dataplane admits no invocation of this epoch.
      this.#moving.set(key, movingSinceMs);
      inFlight = (this.#invocations.get(key) ?? 0) + (await this.#serverInFlight(this.#local.get(ctx.key)?.registrationId));
    }
    const step = decideDrainStep({
      action: action.type,
      drain,
      nowMs: this.#now(),
      inFlight,
      movingSinceMs,
      invocationTimeoutMs: (ctx.run.spec.mode.function?.invocationTimeoutSeconds ?? DEFAULTS.invocationTimeoutSeconds) * 1000,
      executing: this.#local.get(ctx.key)?.execution !== undefined,
    });
    switch (step.type) {
      case 'asPlanned':
        return 'asPlanned';
      case 'waitInFlight':
        return { requeueAfterMs: step.requeueAfterMs };
      case 'handOver':
        await this.#handOver(ctx, step.why);
        this.#moving.delete(key);
        return undefined;
      case 'stopTask':
        await this.#stopForDrain(ctx, drain);
        return undefined;
    }
  }

  /** The Runtime Server's in-flight count of a registration (0 when it holds none). */
  async #serverInFlight(registrationId: string | undefined): Promise<number> {
    if (registrationId === undefined) return 0;
    try {
      return (await this.#options.server.status(registrationId)).inFlight;
    } catch (error) {
      if (error instanceof RuntimeServerError && error.code === 'RegistrationNotFound') return 0;
      throw error;
    }
  }

  /**
   * A planned move of a function Run, in the fencing order: UnregisterFunction (found again
   * after a restart), the release reported in the Pod Lease (the third fence proof), the
   * finalizer, then HandOver through the fenced writer. Only then may the next attempt
   * register on another Pod. Idempotent: a failed write repeats the (done) steps.
   */
  async #handOver(ctx: ReconcileContext, why: string): Promise<void> {
    const { epoch, log } = ctx;
    await this.#work.cleanUp(ctx);
    // Both before the status write, in either order: each costs a round trip the move waits for.
    await Promise.all([this.#options.reportReleased(), this.#options.runs.removeFinalizer(epoch)]);
    await this.#options.runs.transition(epoch, {
      type: 'HandOver',
      message: `Pod ${this.#options.podName} is stopping: attempt ${String(epoch.attempt)} was unregistered (${why}); the next attempt registers on another Pod`,
    });
    log.info({ step: 'handed-over', why }, 'function handed over: unregistered, release reported; Pending for the next attempt');
    this.#options.recordEvent(
      { name: epoch.name, uid: epoch.uid },
      EVENT_REASONS.drained,
      `Pod ${this.#options.podName} is stopping and handed attempt ${String(epoch.attempt)} over; the next attempt is not counted against maxAttempts`,
    );
  }

  /** The drain window ended with the task still running: stopped the way cancel does, then its end is written. */
  async #stopForDrain(ctx: ReconcileContext, drain: Drain): Promise<void> {
    const execution = this.#local.get(ctx.key)?.execution;
    if (execution === undefined) return;
    const seconds = Math.round((drain.deadlineMs - drain.sinceMs) / 1000);
    execution.stoppedFor = 'drain';
    const { found } = await this.#options.server.cancel(execution.id, this.#options.cancelGraceMs);
    ctx.log.info({ found, drainSeconds: seconds }, 'the drain window ended: stopping the task');
    await execution.done;
    await this.#work.attemptFailed(
      ctx,
      `still running when the drain window (${String(seconds)} s) of Pod ${this.#options.podName} ended; stopped`,
      {
        interruptReason: RUN_REASONS.drainWindowExceeded,
      },
    );
  }

  async #claim(ctx: ReconcileContext): Promise<ReconcileResult | undefined> {
    const { namespace } = ctx.epoch;
    const gate = this.claimGate();
    if (!gate.open) return this.#refuseClaim(ctx, { reason: gate.reason, message: gate.message });
    const self = plain<SlotRun>(ctx.run);
    let decision = this.#slots.decide(self, this.#options.cachedRuns(namespace));
    if (!decision.claim) {
      // The cache may lag the live Runs (one this process just ended may still show as
      // holding its unit while the scheduler already saw it end): refuse only on what the
      // API server says now. Decided again, synchronously, with the claims in flight by then.
      decision = this.#slots.decide(self, await this.#withLiveHolders(namespace, decision.holders));
      if (!decision.claim) return this.#refuseClaim(ctx, decision);
    }
    // From the cached Run: the write is fenced on its resourceVersion (a lagging cache gets 409 and a fresh read).
    const claimed = await this.#options.runs.transition(ctx.epoch, { type: 'Claim' }, ctx.run);
    ctx.log.info({ mode: runModeKind(plain<RunSpec>(ctx.run.spec)) }, 'claimed');
    // Go on from the object just written instead of waiting for its watch event
    // (safe: every step re-checks the live Run before it creates anything).
    const next = planRun({
      run: claimed,
      podUID: this.#options.podUID,
      runtime: this.#options.runtime,
      local: this.#local.get(ctx.key),
      nowMs: this.#now(),
    });
    return next.type === 'register' || next.type === 'execute' ? this.#act(next, { ...ctx, run: claimed, written: true }) : undefined;
  }

  /** The namespace's cached Runs, with the given holders as the API server has them now (gone ones left out). */
  async #withLiveHolders(namespace: string, holders: ReadonlyMap<string, string>): Promise<SlotRun[]> {
    const live = await Promise.all([...holders.values()].map((name) => this.#options.runs.get(namespace, name)));
    const cached = this.#options.cachedRuns(namespace).filter((run) => !holders.has(run.metadata.uid ?? ''));
    return [...cached.map((run) => plain<SlotRun>(run)), ...live.filter((run) => run !== undefined)];
  }

  /**
   * Gives a Run bound beyond this Pod's capacity back to the scheduler (RefuseClaim:
   * Pending, no assignment, same attempt, Ready=False PodAtCapacity), fenced on this
   * epoch like every write of the owner: a stale epoch cannot do it.
   */
  async #refuseClaim(
    ctx: ReconcileContext,
    decision: Omit<Extract<ClaimDecision, { claim: false }>, 'claim' | 'held' | 'capacity'> & { held?: number; capacity?: number },
  ): Promise<undefined> {
    this.#slots.release(ctx.epoch.uid);
    await this.#options.runs.transition(ctx.epoch, { type: 'RefuseClaim', reason: decision.reason, message: decision.message }, ctx.run);
    ctx.log.warn(
      { reason: decision.reason, held: decision.held, capacity: decision.capacity },
      decision.reason === RUN_REASONS.podDraining
        ? 'refused the claim: the Pod is stopping or marked for scale-down; the Run goes back to be scheduled'
        : 'refused the claim: the Pod is at capacity; the Run goes back to be scheduled',
    );
    return undefined;
  }

  /** Drops local work for a Run this Pod no longer owns. Writes nothing to the Run. */
  async #release(key: string, why: string): Promise<void> {
    const state = this.#local.get(key);
    if (state === undefined) return;
    const log = this.#options.logger.child({ run: key, runUID: state.uid, attempt: state.attempt });
    if (state.execution !== undefined) {
      // The Runtime Server ends an execution that waits for input itself, right after the answer.
      await letWaitingExecutionEnd(state.execution, this.#options.cancelGraceMs + WAITING_END_MARGIN_MS);
      state.execution.stoppedFor ??= 'release';
      state.execution.abort.abort();
      await state.execution.done;
    }
    if (state.registrationId !== undefined) {
      const { found } = await this.#options.server.unregister(state.registrationId);
      log.info({ registrationId: state.registrationId, found }, 'function unregistered (released)');
    }
    await this.#options.workspaces.remove(state.uid);
    this.#work.forget(key, state);
    log.info({ why }, 'released the Run locally');
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
