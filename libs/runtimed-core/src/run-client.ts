import { REGISTRATION_CLEANUP_FINALIZER } from '@kruntimes/api';
import type { Run, RunPhase } from '@kruntimes/api';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import { KruntimesError } from '@kruntimes/errors';
import { fencedWrite, runClient, writeTransition } from '@kruntimes/run-client';
import type { FencedResult, FencedStep, ObjectApi } from '@kruntimes/run-client';
import { currentPhase } from '@kruntimes/run-state';
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

/** The Run calls RunClient makes: its reads and its fenced writes (a table test passes a fake API server). */
export type RunObjects = Pick<ObjectApi<Run>, 'get' | 'replace' | 'replaceStatus'>;

/** How many times one write re-reads after a 409 before giving up (the reconcile retries later). */
const MAX_CONFLICT_RETRIES = 5;

/**
 * Fenced reads and writes of Runs, on the shared fenced writer (@kruntimes/run-client):
 * every write is read-check-write: a version, a check that it still is this epoch (and in
 * the expected phase), then a write carrying its resourceVersion; a Conflict means someone
 * wrote in between and the cycle repeats on a fresh read, at most MAX_CONFLICT_RETRIES
 * times.
 *
 * `from` (optional on each call) is a version of the Run the caller believes current: the
 * informer's, or the object a write of this process just returned. The first cycle then
 * checks and writes that version instead of a fresh GET. This is as safe as the GET: the
 * write carries that version's resourceVersion, so it lands only if the live Run is
 * exactly the object that was checked; if not (Conflict), or if the checks fail on it (it
 * may be behind), the cycle repeats from a fresh GET.
 */
export class RunClient {
  readonly #runs: RunObjects;
  readonly #hooks: RunClientHooks;
  readonly #clock: () => Date;
  readonly #reports = new ReportNumbers();

  /** `api`: the API server of a KubeConfig, or the Run calls themselves. */
  constructor(api: KubeConfig | RunObjects, hooks: RunClientHooks = {}, clock: () => Date = () => new Date()) {
    this.#runs = 'replaceStatus' in api ? api : runClient(api);
    this.#hooks = hooks;
    this.#clock = clock;
  }

  async get(namespace: string, name: string): Promise<Run | undefined> {
    return this.#runs.get(namespace, name);
  }

  /**
   * Applies one state-machine event as `runtimed` to the Run of this epoch, as the
   * attempt's next numbered report. Throws NotOwnerError when the epoch is gone and the
   * run-state TransitionRefusedError when the machine refuses the event (`staleReport`
   * when a newer report of this attempt was recorded meanwhile); both are terminal.
   * Returns the written Run.
   */
  async transition(epoch: Epoch, event: RunEvent, from?: ReadonlyDeep<Run>): Promise<Run> {
    // Numbered once, on the first version decided on: a retry after a Conflict is the same
    // report, unless the version read now recorded that number already (the first one was behind).
    let sequence: number | undefined;
    const result = await writeTransition(this.#runs, { namespace: epoch.namespace, name: epoch.name, assumed: from }, event, {
      writer: 'runtimed',
      now: () => this.#clock().toISOString(),
      sequence: (run) => {
        if (sequence === undefined || sequence <= (run.status?.reportSequence ?? 0)) {
          sequence = this.#reports.next(epoch, run.status?.reportSequence);
        }
        return sequence;
      },
      check: (run) => ownershipProblem(epoch, run),
      ...this.#conflictPolicy(),
    });
    return settled(epoch, result);
  }

  /**
   * Checks that the live Run still is this epoch and in one of `phases`: done before
   * anything that creates Pod-local state, which a decision on a stale cache must not.
   * `written`: the object a write of this reconcile just returned, which is the live Run
   * as of that write; it is checked instead of a fresh GET (never pass a cached one here:
   * without a write, nothing fences it).
   */
  async verify(epoch: Epoch, phases: readonly RunPhase[], written?: ReadonlyDeep<Run>): Promise<Run> {
    return this.#fenced(epoch, (run) => ({ write: () => Promise.resolve({ ok: true, object: run }) }), phases, written);
  }

  /**
   * Adds the registration-cleanup finalizer (no-op when present), fenced on the epoch and
   * on the live phase being one of `phases`. Returns the Run as written (or as read, when
   * the finalizer was there).
   */
  async addFinalizer(epoch: Epoch, phases: readonly RunPhase[], from?: ReadonlyDeep<Run>): Promise<Run> {
    return this.#fenced(
      epoch,
      (run) => {
        const finalizers = run.metadata.finalizers ?? [];
        if (finalizers.includes(REGISTRATION_CLEANUP_FINALIZER)) return { write: () => Promise.resolve({ ok: true, object: run }) };
        return {
          write: () =>
            this.#runs.replace({ ...run, metadata: { ...run.metadata, finalizers: [...finalizers, REGISTRATION_CLEANUP_FINALIZER] } }),
        };
      },
      phases,
      from,
    );
  }

  /**
   * Removes the registration-cleanup finalizer (no-op when absent or the Run is gone);
   * false when it was already gone (or the Run was). Fenced: only the owner of the epoch
   * releases it; a Run that moved on keeps it for its new owner or for stale-recovery.
   */
  async removeFinalizer(epoch: Epoch): Promise<boolean> {
    let removed = false;
    try {
      await this.#fenced(epoch, (run) => {
        const finalizers = run.metadata.finalizers ?? [];
        removed = finalizers.includes(REGISTRATION_CLEANUP_FINALIZER);
        if (!removed) return { write: () => Promise.resolve({ ok: true, object: run }) };
        return {
          write: () =>
            this.#runs.replace({
              ...run,
              metadata: { ...run.metadata, finalizers: finalizers.filter((f) => f !== REGISTRATION_CLEANUP_FINALIZER) },
            }),
        };
      });
    } catch (error) {
      // Removing our finalizer may let the API server delete the object before we re-read it.
      if (error instanceof NotOwnerError && error.gone) return false;
      throw error;
    }
    return removed;
  }

  /** A write fenced on the epoch and, when given, on the live phase being one of `phases`. */
  async #fenced(
    epoch: Epoch,
    decide: (run: Run) => FencedStep<Run, KruntimesError>,
    phases?: readonly RunPhase[],
    from?: ReadonlyDeep<Run>,
  ): Promise<Run> {
    const result = await fencedWrite<Run, KruntimesError>({
      read: () => this.#runs.get(epoch.namespace, epoch.name),
      assumed: from,
      decide: (run) => {
        const problem = ownershipProblem(epoch, run, phases);
        return problem === undefined ? decide(run) : { refuse: problem };
      },
      ...this.#conflictPolicy(),
    });
    return settled(epoch, result);
  }

  #conflictPolicy(): { retries: number; onConflict: () => void } {
    return { retries: MAX_CONFLICT_RETRIES, onConflict: () => this.#hooks.onConflict?.() };
  }
}

/** Why this version of the Run may not be written by the epoch: not its owner, or (with `phases`) not in one of them. */
function ownershipProblem(epoch: Epoch, run: Run, phases?: readonly RunPhase[]): KruntimesError | undefined {
  const problem = epochMismatch(run, epoch);
  if (problem !== undefined) return new NotOwnerError(epoch, problem);
  const live = currentPhase(run);
  if (phases !== undefined && !phases.includes(live)) return new StaleCacheError(epoch, phases, live);
  return undefined;
}

/** The written Run; every other outcome as runtimed's terminal or retried errors. */
function settled(epoch: Epoch, result: FencedResult<Run, KruntimesError>): Run {
  if (result.ok) return result.object;
  switch (result.reason) {
    case 'NotFound':
      throw new NotOwnerError(epoch, 'the Run is gone', true);
    case 'Conflict':
      throw new KruntimesError('Conflict', `Run ${epoch.namespace}/${epoch.name} kept changing during ${MAX_CONFLICT_RETRIES + 1} writes`, {
        cause: result.error,
      });
    case 'Refused':
      throw result.error;
  }
}
