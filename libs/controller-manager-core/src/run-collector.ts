import type { Run } from '@kruntimes/api';
import { splitObjectKey } from '@kruntimes/controller-runtime';
import type { ControllerLogger, ObjectReconciler, ReadonlyDeep, ReconcileResult } from '@kruntimes/controller-runtime';
import type { ObjectApi } from '@kruntimes/run-client';
import { RUN_INDEXES, collectable } from './caches.ts';
import type { ManagerCacheReaders } from './caches.ts';
import { historyToCollect, ttlDecision } from './collection.ts';
import type { CollectableRun } from './collection.ts';

export const DEFAULT_FINISHED_RUNS_PER_RUNTIME = 100;

export interface RunCollectorOptions {
  caches: Pick<ManagerCacheReaders, 'runs'>;
  /** Deletes, preconditioned on the UID and resourceVersion decided from. */
  runs: Pick<ObjectApi<Run>, 'delete'>;
  logger: ControllerLogger;
  /** Finished Runs kept per Runtime (newest first). */
  finishedRunsPerRuntime: number;
  now: () => number;
}

/**
 * The finished-Run collection, two reconcilers over the Run cache:
 * - `ttl` (key `namespace/run`): deletes a finished Run `ttlSecondsAfterFinished` after it finished;
 * - `reconcileHistory` (key `namespace/runtime`): keeps the newest N finished Runs of each Runtime.
 */
export class RunCollector {
  readonly #options: RunCollectorOptions;

  constructor(options: RunCollectorOptions) {
    this.#options = options;
  }

  /** `run-ttl` (key `namespace/run`); a Run being deleted is already going. */
  readonly ttl: ObjectReconciler<Run> = { reconcile: (run) => this.#reconcileTtl(run) };

  async #reconcileTtl(run: ReadonlyDeep<Run>): Promise<ReconcileResult | undefined> {
    const namespace = run.metadata.namespace ?? '';
    const view = collectable(run);
    const decision = ttlDecision(view, this.#options.now());
    switch (decision.action) {
      case 'keep':
        return undefined;
      case 'wait':
        return { requeueAfterMs: decision.afterMs };
      case 'delete':
        await this.#deleteRun(namespace, view);
        return undefined;
    }
  }

  async reconcileHistory(key: string): Promise<ReconcileResult | undefined> {
    const { namespace = '' } = splitObjectKey(key);
    const limit = this.#options.finishedRunsPerRuntime;
    // Counted, not listed: a Runtime within its history limit costs nothing per Run event.
    if (this.#options.caches.runs.countByIndex(RUN_INDEXES.collectable, key) <= limit) return undefined;
    const runs = this.#options.caches.runs.byIndex(RUN_INDEXES.collectable, key).map(collectable);
    for (const run of historyToCollect(runs, limit)) await this.#deleteRun(namespace, run);
    return undefined;
  }

  /**
   * Deletes a Run preconditioned on the UID and resourceVersion the decision was made
   * from: a Run that changed since (recreated under the same name, or any write at all)
   * is not deleted, and its watch event brings it back for a new decision.
   */
  async #deleteRun(namespace: string, run: CollectableRun): Promise<void> {
    const deleted = await this.#options.runs.delete(namespace, run.name, {
      preconditions: { uid: run.uid, resourceVersion: run.resourceVersion },
      propagationPolicy: 'Background',
    });
    // NotFound or Conflict: gone or changed since the decision; its watch event brings it back if need be.
    if (deleted.ok) this.#options.logger.debug({ run: `${namespace}/${run.name}`, phase: run.phase }, 'deleted finished Run');
  }
}
