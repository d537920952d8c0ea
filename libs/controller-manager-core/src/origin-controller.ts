import type { PolicyRule } from '@kruntimes/api';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, ORIGIN_LABEL, RUN_PLURAL } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { Controller, ControllerGroup, asReconciler } from '@kruntimes/controller-runtime';
import type {
  ControllerLogger,
  InformerFactory,
  ObjectReconciler,
  ObjectRef,
  ReadonlyDeep,
  ReconcileResult,
} from '@kruntimes/controller-runtime';
import { runClient, thaw, writeTransition } from '@kruntimes/run-client';
import type { RunStatusWriter } from '@kruntimes/run-client';
import { decideOrigin } from './decide-origin.ts';
import { rfc3339 } from './rfc3339.ts';

/** What the origin controller does through the API: read labelled Runs, write their status. */
export const ORIGIN_CONTROLLER_RULES: readonly PolicyRule[] = [
  { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [API_GROUP], resources: [`${RUN_PLURAL}/status`], verbs: ['update'] },
];

export interface OriginControllerOptions {
  kubeConfig: KubeConfig;
  /** The Manager's shared informers, which it starts first and stops last; default: this one's own, started and stopped with it. */
  informers?: InformerFactory;
  /** Watch one namespace; all when undefined. */
  namespace?: string;
  logger: ControllerLogger;
  now?: () => number;
}

/**
 * The `run-origin` controller of the controller-manager (run it only while holding the
 * leader Lease): an OriginReconciler over the cache of the Runs labelled
 * kruntimes.io/origin.
 */
export class OriginController {
  readonly #group: ControllerGroup;

  constructor(options: OriginControllerOptions) {
    const { kubeConfig, logger } = options;
    this.#group = new ControllerGroup({ kubeConfig, logger, informers: options.informers });
    const runs = this.#group.informers.runs({ namespace: options.namespace, labelSelector: ORIGIN_LABEL, name: 'origin-runs' });
    const reconciler = new OriginReconciler({ runs: runClient(kubeConfig), logger, now: options.now ?? Date.now });
    const controller = new Controller({ name: 'run-origin', logger, reconcile: asReconciler(runs, reconciler) });
    this.#group.add(controller);
    runs.enqueueTo((key) => {
      controller.enqueue(key);
    });
  }

  /** Fills the cache (a shared one is synced already), then starts the controller. */
  start(): Promise<void> {
    return this.#group.start();
  }

  stop(): Promise<void> {
    return this.#group.stop();
  }
}

export interface OriginReconcilerOptions {
  /** The Runs' status writes. */
  runs: RunStatusWriter;
  logger: ControllerLogger;
  now: () => number;
}

/**
 * A Run that `krt sync` created from a local run (spec.origin, label kruntimes.io/origin)
 * goes from Pending straight to its recorded terminal phase, one fenced status write
 * (decideOrigin, run-state's RecordOrigin). The scheduler never binds such a Run, so
 * nothing else writes its status.
 */
export class OriginReconciler implements ObjectReconciler<Run> {
  readonly #runClient: RunStatusWriter;
  readonly #logger: ControllerLogger;
  readonly #now: () => number;

  constructor(options: OriginReconcilerOptions) {
    this.#runClient = options.runs;
    this.#logger = options.logger;
    this.#now = options.now;
  }

  async reconcile(cached: ReadonlyDeep<Run>, { key }: ObjectRef): Promise<ReconcileResult | undefined> {
    const now = rfc3339(this.#now());
    const decision = decideOrigin(thaw<Run>(cached), now);
    switch (decision.action) {
      case 'ignore':
        return undefined;
      case 'refused':
        // The spec cannot change (immutable origin): retrying would refuse again.
        this.#logger.error({ run: key, reason: decision.message }, 'the recorded result of a synced Run was refused');
        return undefined;
      case 'record':
        break;
    }
    // Fenced on the cached resourceVersion: a Run changed or gone since the cache showed it
    // is refused (Conflict, NotFound), and its watch event enqueues it again.
    const written = await writeTransition(
      this.#runClient,
      cached,
      { type: 'RecordOrigin' },
      { writer: 'controller-manager', now: () => now },
    );
    if (written.ok) this.#logger.debug({ run: key, phase: decision.status.phase }, 'recorded the result of a synced local run');
    return undefined;
  }
}
