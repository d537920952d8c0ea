import { RUN_REASONS, runModeKind } from '@kruntimes/api';
import type { RunSpec } from '@kruntimes/api';
import { splitObjectKey } from '@kruntimes/controller-runtime';
import type { ReconcileResult } from '@kruntimes/controller-runtime';
import { TransitionRefusedError } from '@kruntimes/run-state';
import { ClaimSlots } from './claim-slots.ts';
import type { ClaimDecision, SlotRun } from './claim-slots.ts';
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
import type { RunReconcilerOptions } from './reconcile-types.ts';
import { TaskExecution } from './task-execution.ts';

export { FUNCTION_POLL_MS } from './function-lifecycle.ts';
export type { RunReconcilerOptions } from './reconcile-types.ts';

/** On top of the cancel grace: how long an execution that waits for input gets to end on its own when released. */
const WAITING_END_MARGIN_MS = 5_000;

/** Look again this soon after acting on a cache that was behind the live Run. */
const STALE_CACHE_RETRY_MS = 200;

/**
 * runtimed's reconciler: takes a Run key, plans one step from the cache and local state
 * (plan.ts), does it and returns. Every status write goes through the fenced RunClient;
 * a write that finds another epoch drops the work locally and never writes again. The
 * steps of each mode are in function-lifecycle.ts and task-execution.ts.
 */
export class RunReconciler {
  readonly #o: RunReconcilerOptions;
  readonly #now: () => number;
  readonly #local = new Map<string, LocalState>();
  /** Epochs whose Pod-local state this process confirmed stopped (reported in the Pod Lease). */
  readonly #released = new ReleasedRuns();
  readonly #work: RunWork;
  readonly #functions: FunctionLifecycle;
  readonly #tasks: TaskExecution;
  /** The claims in flight and the capacity check in front of each claim. */
  readonly #slots: ClaimSlots;

  constructor(options: RunReconcilerOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#slots = new ClaimSlots(options.podUID, options.podName, options.runsPerPod);
    this.#work = new RunWork({ options, now: this.#now, local: this.#local, released: this.#released });
    this.#tasks = new TaskExecution(this.#work);
    this.#functions = new FunctionLifecycle(this.#work, this.#tasks.stop);
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
    const run = this.#o.cached(namespace, name);
    const local = this.#local.get(key);
    if (run === undefined) await this.#tasks.dropRecordsOfGoneRuns(namespace);
    const outcomeUnwritten = run !== undefined && (await this.#tasks.outcomeUnwritten(key, run));
    const action = planRun({ run, podUID: this.#o.podUID, runtime: this.#o.runtime, local, outcomeUnwritten, nowMs: this.#now() });
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
      return await this.#act(action, { key, run, epoch, log });
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
          await this.#o.runs.transition(epoch, {
            type: 'CancelAccepted',
            message:
              run.spec.mode.task !== undefined
                ? `cancel requested; stopping the task (SIGTERM, SIGKILL after ${this.#o.cancelGraceMs / 1000} s)`
                : 'cancel requested; unregistering the function',
          });
          log.info('cancelling');
        };
        const exited = await this.#tasks.stop(ctx, 'cancel', accept);
        // A task that handled SIGTERM and exited on its own has an exit code worth recording.
        const exitCode = exited?.signal === '' && exited.exitCode >= 0 ? exited.exitCode : undefined;
        await this.#o.runs.transition(epoch, {
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
        await this.#o.runs.transition(epoch, {
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
        await this.#o.runs.removeFinalizer(epoch);
        log.info('finalizer removed after the terminal status');
        return undefined;
    }
  }

  async #claim(ctx: ReconcileContext): Promise<ReconcileResult | undefined> {
    const { namespace } = ctx.epoch;
    const self = plain<SlotRun>(ctx.run);
    let decision = this.#slots.decide(self, this.#o.cachedRuns(namespace));
    if (!decision.claim) {
      // The cache may lag the live Runs (one this process just ended may still show as
      // holding its unit while the scheduler already saw it end): refuse only on what the
      // API server says now. Decided again, synchronously, with the claims in flight by then.
      decision = this.#slots.decide(self, await this.#withLiveHolders(namespace, decision.holders));
      if (!decision.claim) return this.#refuseClaim(ctx, decision);
    }
    // From the cached Run: the write is fenced on its resourceVersion (a lagging cache gets 409 and a fresh read).
    const claimed = await this.#o.runs.transition(ctx.epoch, { type: 'Claim' }, ctx.run);
    ctx.log.info({ mode: runModeKind(plain<RunSpec>(ctx.run.spec)) }, 'claimed');
    // Go on from the object just written instead of waiting for its watch event
    // (safe: every step re-checks the live Run before it creates anything).
    const next = planRun({
      run: claimed,
      podUID: this.#o.podUID,
      runtime: this.#o.runtime,
      local: this.#local.get(ctx.key),
      nowMs: this.#now(),
    });
    return next.type === 'register' || next.type === 'execute' ? this.#act(next, { ...ctx, run: claimed, written: true }) : undefined;
  }

  /** The namespace's cached Runs, with the given holders as the API server has them now (gone ones left out). */
  async #withLiveHolders(namespace: string, holders: ReadonlyMap<string, string>): Promise<SlotRun[]> {
    const live = await Promise.all([...holders.values()].map((name) => this.#o.runs.get(namespace, name)));
    const cached = this.#o.cachedRuns(namespace).filter((run) => !holders.has(run.metadata.uid ?? ''));
    return [...cached.map((run) => plain<SlotRun>(run)), ...live.filter((run) => run !== undefined)];
  }

  /**
   * Gives a Run bound beyond this Pod's capacity back to the scheduler (RefuseClaim:
   * Pending, no assignment, same attempt, Ready=False PodAtCapacity), fenced on this
   * epoch like every write of the owner: a stale epoch cannot do it.
   */
  async #refuseClaim(ctx: ReconcileContext, decision: Extract<ClaimDecision, { claim: false }>): Promise<undefined> {
    this.#slots.release(ctx.epoch.uid);
    await this.#o.runs.transition(ctx.epoch, { type: 'RefuseClaim', reason: decision.reason, message: decision.message }, ctx.run);
    ctx.log.warn(
      { reason: decision.reason, held: decision.held, capacity: decision.capacity },
      'refused the claim: the Pod is at capacity; the Run goes back to be scheduled',
    );
    return undefined;
  }

  /** Drops local work for a Run this Pod no longer owns. Writes nothing to the Run. */
  async #release(key: string, why: string): Promise<void> {
    const state = this.#local.get(key);
    if (state === undefined) return;
    const log = this.#o.logger.child({ run: key, runUID: state.uid, attempt: state.attempt });
    if (state.execution !== undefined) {
      // The Runtime Server ends an execution that waits for input itself, right after the answer.
      await letWaitingExecutionEnd(state.execution, this.#o.cancelGraceMs + WAITING_END_MARGIN_MS);
      state.execution.stoppedFor ??= 'release';
      state.execution.abort.abort();
      await state.execution.done;
    }
    if (state.registrationId !== undefined) {
      const { found } = await this.#o.server.unregister(state.registrationId);
      log.info({ registrationId: state.registrationId, found }, 'function unregistered (released)');
    }
    await this.#o.workspaces.remove(state.uid);
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
