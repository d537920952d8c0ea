import type { KubeConfig } from '@kubernetes/client-node';
import { Controller, ControllerGroup, EventRecorder, PooledKubeConfig } from '@kruntimes/controller-runtime';
import type { ControllerLogger, InformerFactory, ReconcileResult } from '@kruntimes/controller-runtime';
import { RuntimeUseReviewer, subjectAccessReview } from '@kruntimes/authz';
import { runClient } from '@kruntimes/run-client';
import { SnapshotController } from '@kruntimes/snapshot-core';
import { AssumeCache } from './assume-cache.ts';
import { SchedulerMetrics } from './metrics.ts';
import { PlacementReconciler } from './placement-reconciler.ts';
import { routeToRuntimes, schedulerCaches } from './scheduler-caches.ts';

export interface SchedulerOptions {
  kubeConfig: KubeConfig;
  /** The Manager's shared informers, which it starts first and stops last; default: this one's own, started and stopped with it. */
  informers?: InformerFactory;
  /** Watch one namespace; all namespaces when undefined. */
  namespace?: string;
  logger: ControllerLogger;
  metrics?: SchedulerMetrics;
  /** Runtimes placed in parallel (one Runtime is never placed by two workers at once). */
  workers?: number;
  /** Status writes in flight within one Runtime's pass. */
  bindConcurrency?: number;
  /** Milliseconds since the epoch; injectable for tests. */
  now?: () => number;
  /** How long a bind whose write outcome is unknown keeps its unit (see AssumeCache). Default 30 s. */
  uncertainBindTtlMs?: number;
  /** How long a Run may stay Pending with an unresolvable source before it fails. Default SOURCE_SNAPSHOT.maxWaitSeconds. */
  sourceWaitMs?: number;
  /**
   * Answers whether a Run's recorded creator may still `use` its Runtime (a cached
   * SubjectAccessReview with the scheduler's identity). Default: one built from kubeConfig
   * with the gateway's cache policy.
   */
  runtimeUse?: RuntimeUseReviewer;
  /** While a Run waits Forbidden, or its creator could not be reviewed, look again this often. Default 10 s. */
  accessRecheckMs?: number;
}

/**
 * Binds Pending Runs to ready Runtime Pods. The unit of work is a Runtime
 * (`namespace/runtimeName`): one pass plans all of its Pending Runs against all of its
 * Pods, oldest first, and the work queue guarantees that no two passes of one Runtime
 * overlap, so capacity is decided in one place. Any Run, Pod or Runtime event enqueues
 * its Runtime; a pass that finds nothing to do writes nothing, and nothing is polled,
 * except a Run in retry backoff, which is looked at again when its `notBefore` passes.
 *
 * Every write is a status replace fenced on the Run's resourceVersion, built by the
 * run-state machine (`Bind`, `Unschedulable`, `CancelBeforeAssignment`). Binds are
 * assumed before they are written (see AssumeCache), so the next pass counts them even
 * before the watch delivers them. Run this only while holding the leader Lease.
 */
export class Scheduler {
  readonly metrics: SchedulerMetrics;
  readonly #group: ControllerGroup;
  readonly #controller: Controller;
  readonly #placement: PlacementReconciler;
  /**
   * Makes the execution snapshot a Run needs before placement binds it. Run here, not in
   * the controller-manager, so that whatever can bind can also resolve: a scheduler never
   * waits on another component for the gate it enforces.
   */
  readonly #snapshots: SnapshotController;

  constructor(options: SchedulerOptions) {
    this.metrics = options.metrics ?? new SchedulerMetrics();
    const now = options.now ?? Date.now;
    const { namespace, logger } = options;
    // One connection pool for every request of this scheduler (see PooledKubeConfig).
    const kubeConfig = PooledKubeConfig.from(options.kubeConfig);
    const assume = new AssumeCache();
    this.#group = new ControllerGroup({ kubeConfig, logger, informers: options.informers });
    const caches = schedulerCaches(this.#group.informers, namespace);
    this.#placement = new PlacementReconciler({
      caches: caches,
      runs: runClient(kubeConfig),
      events: EventRecorder.forKubeConfig(kubeConfig, { component: 'kruntimes-scheduler', logger, now }),
      runtimeUse: options.runtimeUse ?? new RuntimeUseReviewer({ review: subjectAccessReview(kubeConfig) }),
      assume,
      queue: {
        enqueue: (key) => {
          this.#controller.enqueue(key);
        },
        enqueueRateLimited: (key) => {
          this.#controller.queue.addRateLimited(key);
        },
      },
      logger,
      metrics: this.metrics,
      now,
      bindConcurrency: Math.max(1, options.bindConcurrency ?? 16),
      uncertainBindTtlMs: options.uncertainBindTtlMs ?? 30_000,
      accessRecheckMs: options.accessRecheckMs ?? 10_000,
    });
    this.#controller = new Controller({
      name: 'scheduler',
      logger,
      workers: options.workers ?? 2,
      reconcile: (key) => this.reconcile(key),
    });
    routeToRuntimes(
      caches,
      assume,
      (key) => {
        this.#controller.enqueue(key);
      },
      (key, run, deleted) => {
        this.#placement.runObserved(key, run, deleted);
      },
    );
    this.#snapshots = new SnapshotController({
      kubeConfig,
      runs: caches.runs,
      logger,
      now,
      ...(options.sourceWaitMs === undefined ? {} : { maxWaitMs: options.sourceWaitMs }),
    });
    this.#group.add(this.#snapshots, this.#controller);
  }

  /** Fills the caches (shared ones are synced already), then starts placing: the first pass sees complete caches. */
  start(): Promise<void> {
    return this.#group.start();
  }

  /** The waiting reasons still being written are waited for before the caches stop. */
  stop(): Promise<void> {
    return this.#group.stop(() => this.#placement.waitWritesSettled());
  }

  /** One placement pass over a Runtime's Pending Runs (see PlacementReconciler). */
  reconcile(key: string): Promise<ReconcileResult | undefined> {
    return this.#placement.reconcile(key);
  }
}
