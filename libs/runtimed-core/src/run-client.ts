import { API_GROUP, API_VERSION, REGISTRATION_CLEANUP_FINALIZER, RUN_PLURAL } from '@kruntimes/api';
import type { Run, RunPhase } from '@kruntimes/api';
import { ApiException, CustomObjectsApi } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import { KruntimesError } from '@kruntimes/errors';
import { TransitionRefusedError, currentPhase, transition } from '@kruntimes/run-state';
import { epochMismatch } from './epoch.ts';
import { ReportNumbers } from './report-numbers.ts';
import type { Epoch } from './epoch.ts';
import type { RunEvent } from '@kruntimes/run-state';

/**
 * The live Run no longer belongs to this epoch: deleted and recreated, requeued to
 * another attempt, or bound to another Pod. Terminal: the caller drops the work locally
 * and never writes this Run again.
 */
export class NotOwnerError extends KruntimesError {
  /** The Run object no longer exists at all. */
  readonly gone: boolean;

  constructor(epoch: Epoch, detail: string, gone = false) {
    super(
      'EpochMismatch',
      `Run ${epoch.namespace}/${epoch.name} attempt ${epoch.attempt} is no longer owned by Pod ${epoch.podUID}: ${detail}`,
      { terminal: true },
    );
    this.name = 'NotOwnerError';
    this.gone = gone;
  }
}

/**
 * The live Run is in another phase than the informer cache said (the cache lags the
 * API server). Not terminal: the reconcile is retried once the cache caught up.
 */
export class StaleCacheError extends KruntimesError {
  constructor(epoch: Epoch, expected: readonly RunPhase[], live: RunPhase) {
    super('Conflict', `Run ${epoch.namespace}/${epoch.name} is ${live}, not ${expected.join(' or ')} as cached`);
    this.name = 'StaleCacheError';
  }
}

export interface RunClientHooks {
  /** A write lost a race on resourceVersion (409) and is retried on a fresh read. */
  onConflict?(): void;
}

/** How many times one write re-reads after a 409 before giving up (the reconcile retries later). */
const MAX_CONFLICT_RETRIES = 5;

/**
 * Fenced reads and writes of Runs. Every write is read-check-write: a fresh GET, a check
 * that the live object still is this epoch, then a replace carrying that object's
 * resourceVersion; a 409 means someone wrote in between and the whole cycle repeats.
 *
 * `from` (optional on each call) is a version of the Run the caller believes current: the
 * informer's, or the object a write of this process just returned. The first cycle then
 * checks and writes that version instead of a fresh GET. This is as safe as the GET: the
 * write carries that version's resourceVersion, so it lands only if the live Run is
 * exactly the object that was checked; if not (409), or if the checks fail on it (it may
 * be behind), the cycle repeats from a fresh GET.
 */
export class RunClient {
  readonly #api: CustomObjectsApi;
  readonly #hooks: RunClientHooks;
  readonly #clock: () => Date;
  readonly #reports = new ReportNumbers();

  constructor(kubeConfig: KubeConfig, hooks: RunClientHooks = {}, clock: () => Date = () => new Date()) {
    this.#api = kubeConfig.makeApiClient(CustomObjectsApi);
    this.#hooks = hooks;
    this.#clock = clock;
  }

  async get(namespace: string, name: string): Promise<Run | undefined> {
    try {
      return (await this.#api.getNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace,
        plural: RUN_PLURAL,
        name,
      })) as Run;
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return undefined;
      throw error;
    }
  }

  /**
   * Applies one state-machine event as `runtimed` to the Run of this epoch, as the
   * attempt's next numbered report. Throws NotOwnerError when the epoch is gone and the
   * run-state TransitionRefusedError when the machine refuses the event (`staleReport`
   * when a newer report of this attempt was recorded meanwhile); both are terminal.
   * Returns the written Run.
   */
  async transition(epoch: Epoch, event: RunEvent, from?: ReadonlyDeep<Run>): Promise<Run> {
    // Numbered once, on the first read: a retry after a 409 is the same report, unless the
    // version read now recorded that number already (the first one was behind).
    let sequence: number | undefined;
    return this.#fenced(
      epoch,
      async (run) => {
        if (sequence === undefined || sequence <= (run.status?.reportSequence ?? 0)) {
          sequence = this.#reports.next(epoch, run.status?.reportSequence);
        }
        const result = transition({ run, event, writer: 'runtimed', now: this.#clock().toISOString(), sequence });
        if (!result.ok) throw result.error;
        return (await this.#api.replaceNamespacedCustomObjectStatus({
          group: API_GROUP,
          version: API_VERSION,
          namespace: epoch.namespace,
          plural: RUN_PLURAL,
          name: epoch.name,
          body: { ...run, status: result.status },
        })) as Run;
      },
      undefined,
      from,
    );
  }

  /**
   * Checks that the live Run still is this epoch and in one of `phases`: done before
   * anything that creates Pod-local state, which a decision on a stale cache must not.
   * `written`: the object a write of this reconcile just returned, which is the live Run
   * as of that write; it is checked instead of a fresh GET (never pass a cached one here:
   * without a write, nothing fences it).
   */
  async verify(epoch: Epoch, phases: readonly RunPhase[], written?: ReadonlyDeep<Run>): Promise<Run> {
    return this.#fenced(epoch, (run) => Promise.resolve(run), phases, written);
  }

  /**
   * Adds the registration-cleanup finalizer (no-op when present), fenced on the epoch and
   * on the live phase being one of `phases`. Returns the Run as written (or as read, when
   * the finalizer was there).
   */
  async addFinalizer(epoch: Epoch, phases: readonly RunPhase[], from?: ReadonlyDeep<Run>): Promise<Run> {
    return this.#fenced(
      epoch,
      async (run) => {
        const finalizers = run.metadata.finalizers ?? [];
        if (finalizers.includes(REGISTRATION_CLEANUP_FINALIZER)) return run;
        return this.#replace(epoch, { ...run, metadata: { ...run.metadata, finalizers: [...finalizers, REGISTRATION_CLEANUP_FINALIZER] } });
      },
      phases,
      from,
    );
  }

  /**
   * Removes the registration-cleanup finalizer (no-op when absent or the Run is gone).
   * Fenced: only the owner of the epoch releases it; a Run that moved on keeps it for its
   * new owner or for stale-recovery.
   */
  /** Removes the registration-cleanup finalizer; false when it was already gone (or the Run was). */
  async removeFinalizer(epoch: Epoch): Promise<boolean> {
    let removed = false;
    try {
      await this.#fenced(epoch, async (run) => {
        const finalizers = run.metadata.finalizers ?? [];
        removed = finalizers.includes(REGISTRATION_CLEANUP_FINALIZER);
        if (!removed) return run;
        return this.#replace(epoch, {
          ...run,
          metadata: { ...run.metadata, finalizers: finalizers.filter((f) => f !== REGISTRATION_CLEANUP_FINALIZER) },
        });
      });
    } catch (error) {
      // Removing our finalizer may let the API server delete the object before we re-read it.
      if (error instanceof NotOwnerError && error.gone) return false;
      throw error;
    }
    return removed;
  }

  async #replace(epoch: Epoch, body: Run): Promise<Run> {
    return (await this.#api.replaceNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace: epoch.namespace,
      plural: RUN_PLURAL,
      name: epoch.name,
      body,
    })) as Run;
  }

  async #fenced(epoch: Epoch, write: (run: Run) => Promise<Run>, phases?: readonly RunPhase[], from?: ReadonlyDeep<Run>): Promise<Run> {
    let known = from === undefined ? undefined : (structuredClone(from) as Run);
    for (let attempt = 0; ; attempt += 1) {
      // The known version once, first; every other cycle reads the live Run.
      const assumed = known;
      known = undefined;
      const run = assumed ?? (await this.get(epoch.namespace, epoch.name));
      if (run === undefined) throw new NotOwnerError(epoch, 'the Run is gone', true);
      const problem = epochMismatch(run, epoch);
      const live = currentPhase(run);
      const wrongPhase = phases !== undefined && !phases.includes(live);
      // A known version may be behind the live Run: only the live one can refuse.
      if (assumed !== undefined && (problem !== undefined || wrongPhase)) continue;
      if (problem !== undefined) throw new NotOwnerError(epoch, problem);
      if (phases !== undefined && wrongPhase) throw new StaleCacheError(epoch, phases, live);
      try {
        return await write(run);
      } catch (error) {
        // The state machine refused the event on a known version, which may be behind: ask the live one.
        if (assumed !== undefined && error instanceof TransitionRefusedError) continue;
        if (!(error instanceof ApiException && error.code === 409)) throw error;
        this.#hooks.onConflict?.();
        if (attempt >= MAX_CONFLICT_RETRIES) {
          throw new KruntimesError('Conflict', `Run ${epoch.namespace}/${epoch.name} kept changing during ${attempt + 1} writes`, {
            cause: error,
          });
        }
      }
    }
  }
}
