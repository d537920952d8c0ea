import { DEFAULTS, RUN_REASONS } from '@kruntimes/api';
import type { ReconcileResult } from '@kruntimes/controller-runtime';
import { runtimeServerV1 } from '@kruntimes/proto';
import { functionEndpoint } from './endpoint.ts';
import { remainingIdleMs } from './plan.ts';
import type { LocalState, ReconcileContext, RunWork } from './run-work.ts';
import { RuntimeServerError, isDefiniteRegistrationFailure } from './runtime-server.ts';
import { SourceMismatchError } from './workspace.ts';

const { RegistrationState } = runtimeServerV1;

/** How often a Ready function's registration is checked (fatal errors, idle clock). */
export const FUNCTION_POLL_MS = 2_000;
/** While an invocation is in flight during deletion, look again this often. */
const IN_FLIGHT_POLL_MS = 250;

/** Stops an epoch's work and cleans up (the task execution's step; a function has no execution). */
export type StopWork = (ctx: ReconcileContext, why: 'cancel' | 'expire') => Promise<unknown>;

/**
 * A function Run on this Pod: register (Ready), watch the registration (fatal errors,
 * a restarted Runtime Server, the idle clock), recover from a lost registration, and on
 * deletion wait for the in-flight invocation before everything is released.
 */
export class FunctionLifecycle {
  readonly #work: RunWork;
  readonly #stop: StopWork;

  constructor(work: RunWork, stop: StopWork) {
    this.#work = work;
    this.#stop = stop;
  }

  async register(ctx: ReconcileContext): Promise<ReconcileResult | undefined> {
    const { run, epoch, log } = ctx;
    const { options } = this.#work;
    const fn = run.spec.mode.function;
    if (fn === undefined) return undefined;
    // The finalizer first: from now on Pod-local state may exist, and deleting the Run
    // object must wait for runtimed to release it.
    // Each write goes on from the Run as known (the claim's result, else the cache), fenced on its resourceVersion.
    const finalized = await options.runs.addFinalizer(epoch, ['Running'], run);
    const state = this.#work.track(ctx, 'function');
    let registrationId: string;
    try {
      ({ registrationId } = await this.#work.registerIdempotently(ctx, fn.handler));
    } catch (error) {
      if (error instanceof SourceMismatchError) {
        await this.#work.sourceRefused(ctx, error);
        return undefined;
      }
      if (!isDefiniteRegistrationFailure(error)) {
        // Unknown outcome (server unreachable, deadline): retried with the same attempt,
        // which the Runtime Server answers with the same registration if it took effect.
        options.metrics.registration('indeterminate');
        throw error;
      }
      options.metrics.registration('failed');
      log.warn({ code: error.code, err: error.message }, 'registration failed');
      await this.#work.attemptFailed(ctx, `registration failed: ${error.message}`);
      return undefined;
    }
    state.registrationId = registrationId;
    const endpoint = functionEndpoint(
      options.gatewayHost,
      { namespace: epoch.namespace, runtime: options.runtime, runUID: epoch.uid },
      options.gatewayCaPem,
    );
    await options.runs.transition(epoch, { type: 'Registered', endpoint }, finalized);
    log.info({ endpoint: endpoint.url }, 'function registered; Ready');
    return { requeueAfterMs: FUNCTION_POLL_MS };
  }

  async watch(ctx: ReconcileContext, lifetimeRemainingMs: number | undefined): Promise<ReconcileResult | undefined> {
    const fn = ctx.run.spec.mode.function;
    if (fn === undefined) return undefined;
    const state = this.#work.track(ctx, 'function');
    // After a restart runtimed knows no ID: registering the same attempt with the same
    // configuration returns the one the Runtime Server holds (nothing registered twice).
    if (state.registrationId === undefined) {
      await this.#work.options.runs.verify(ctx.epoch, ['Ready']);
      const { registrationId, created } = await this.#work.registerIdempotently(ctx, fn.handler);
      state.registrationId = registrationId;
      // Created anew means the Runtime Server had lost the one that became Ready (it
      // restarted): module state and idle clock are gone, so that epoch is over.
      if (created) return this.#registrationLost(ctx, 'the Runtime Server no longer held the registration (it restarted)');
    }
    const status = await this.#status(state, state.registrationId);
    if (status === undefined) return this.#registrationLost(ctx, 'the Runtime Server no longer holds the registration (it restarted)');
    if (status.state === RegistrationState.REGISTRATION_STATE_FAILED) {
      return this.#registrationLost(ctx, `the registration failed: ${status.fatalError?.message ?? 'fatal Runtime Server error'}`);
    }
    const idleRemainingMs = remainingIdleMs(fn.idleTimeoutSeconds, status.lastActivity, status.inFlight, this.#work.now());
    if (idleRemainingMs !== undefined && idleRemainingMs <= 0) {
      await this.#stop(ctx, 'expire');
      await this.#work.options.runs.transition(ctx.epoch, {
        type: 'TimedOut',
        reason: RUN_REASONS.idleTimeout,
        message: `no invocation for ${fn.idleTimeoutSeconds ?? 0}s (mode.function.idleTimeoutSeconds)`,
      });
      ctx.log.info('idle timeout');
      return undefined;
    }
    return { requeueAfterMs: Math.max(0, Math.min(FUNCTION_POLL_MS, idleRemainingMs ?? Infinity, lifetimeRemainingMs ?? Infinity)) };
  }

  /** The registration's status; undefined (and forgotten) when the Runtime Server no longer holds it. */
  async #status(state: LocalState, registrationId: string): Promise<runtimeServerV1.FunctionStatusResponse | undefined> {
    try {
      return await this.#work.options.server.status(registrationId);
    } catch (error) {
      if (error instanceof RuntimeServerError && error.code === 'RegistrationNotFound') {
        delete state.registrationId;
        return undefined;
      }
      throw error;
    }
  }

  /**
   * The registration that made the Run Ready is gone: the Run stops being ready
   * (Ready=False, RegistrationLost) and registration recovery starts a new attempt
   * through the shared retry engine (registration is always safe to retry).
   */
  async #registrationLost(ctx: ReconcileContext, why: string): Promise<undefined> {
    ctx.log.warn({ why }, 'registration lost; recovering');
    await this.#work.options.runs.transition(ctx.epoch, { type: 'RegistrationLost', message: why });
    await this.#work.attemptFailed(ctx, why);
    return undefined;
  }

  /**
   * Deletion of a function Run, in the order of the design: stop accepting invokes (the
   * Run is deleting, so the dataplane refuses it), wait for the bounded in-flight
   * invocation, UnregisterFunction, delete the workspace, then release the finalizer
   * (which is what releases the capacity unit).
   */
  async finalize(ctx: ReconcileContext): Promise<ReconcileResult | undefined> {
    const { key, run, epoch, log } = ctx;
    const state = this.#work.local.get(key);
    const fn = run.spec.mode.function;
    if (state?.registrationId !== undefined && fn !== undefined) {
      const inFlight = await this.#inFlight(state.registrationId);
      const waitUntil =
        Date.parse(run.metadata.deletionTimestamp ?? '') + (fn.invocationTimeoutSeconds ?? DEFAULTS.invocationTimeoutSeconds) * 1000;
      if (inFlight > 0 && this.#work.now() < waitUntil) {
        log.info({ inFlight }, 'deleting: waiting for the in-flight invocation');
        return { requeueAfterMs: IN_FLIGHT_POLL_MS };
      }
    }
    await this.#work.cleanUp(ctx);
    // A reconcile from a cache that has not yet seen the removal repeats the (idempotent)
    // cleanup; only what was actually done is logged as a step.
    if (await this.#work.options.runs.removeFinalizer(epoch)) log.info({ step: 'finalizer-removed' }, 'deleting: finalizer removed');
    return undefined;
  }

  async #inFlight(registrationId: string): Promise<number> {
    try {
      return (await this.#work.options.server.status(registrationId)).inFlight;
    } catch (error) {
      if (error instanceof RuntimeServerError && error.code === 'RegistrationNotFound') return 0;
      throw error;
    }
  }
}
