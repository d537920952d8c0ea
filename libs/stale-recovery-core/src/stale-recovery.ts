import type { KubeConfig } from '@kubernetes/client-node';
import { Controller, ControllerGroup, asReconciler, objectKey, systemMonotonicClock } from '@kruntimes/controller-runtime';
import type { ControllerLogger, InformerFactory, MonotonicClock } from '@kruntimes/controller-runtime';
import { LeaseObservations, observeLeases } from './lease-observations.ts';
import { RecoveryMetrics } from './metrics.ts';
import { recoveryCaches, routeToRuns } from './recovery-caches.ts';
import type { RecoveryCaches } from './recovery-caches.ts';
import { RecoveryReconciler } from './recovery-reconciler.ts';
import { runWrites } from './run-writes.ts';

export interface StaleRecoveryOptions {
  kubeConfig: KubeConfig;
  /** The Manager's shared informers, which it starts first and stops last; default: this one's own, started and stopped with it. */
  informers?: InformerFactory;
  /** Watch one namespace; all namespaces when undefined. */
  namespace?: string;
  logger: ControllerLogger & { info(object: object, message: string): void };
  metrics?: RecoveryMetrics;
  workers?: number;
  /** Every Run is looked at again this often even if nothing changed (0: never). Default 5 minutes. */
  resyncMs?: number;
  /** A suspect Run is looked at again at least this often. Default 10 s. */
  recheckMs?: number;
  /** Consecutive Lease renewals without the Run, and their minimum span, before the owner counts as having stopped reporting it. */
  reportingGrace?: { renewals?: number; minGraceMs?: number };
  /**
   * The cluster default of the retry policy (`--automatic-retry`, chart value
   * `retry.automatic`): whether a retrySafe task that lost its owner is retried
   * automatically; a namespace annotation can only narrow it. Default true.
   */
  automaticRetry?: boolean;
  /** Milliseconds since the epoch, for the times written on Runs; injectable for tests. */
  now?: () => number;
  /**
   * Times when this process saw each Pod Lease change, and judges its expiry by (never the
   * renewTime the Pod wrote); injectable for tests. Default: the system's monotonic clock.
   */
  clock?: MonotonicClock;
}

/**
 * Detects lost owners of Runs and recovers them (docs/lifecycle.md and "How recovery works" in docs/operations.md). The unit of
 * work is a Run key. Each reconcile gathers the evidence about the Run's owner from the
 * caches (the exact Pod UID, its deletion, its place in the Service endpoints, its Lease
 * and what that Lease reports), lets `decideRecovery` choose one action, and performs it
 * as one write: re-read the live Run, re-check its epoch, decide again on it, and write
 * with its resourceVersion (409: look again). A suspect owner only makes the Run
 * Ready=False Recovering; a new attempt starts only after the fence. Run this only while
 * holding the leader Lease. The reconcile is RecoveryReconciler's; this class wires it to
 * the caches, the Lease observations, the work queue and the resync.
 */
export class StaleRecovery {
  readonly metrics: RecoveryMetrics;
  readonly #options: StaleRecoveryOptions;
  readonly #group: ControllerGroup;
  readonly #caches: RecoveryCaches;
  readonly #controller: Controller;
  #resyncTimer: NodeJS.Timeout | undefined;

  constructor(options: StaleRecoveryOptions) {
    this.#options = options;
    this.metrics = options.metrics ?? new RecoveryMetrics();
    const clock = options.clock ?? systemMonotonicClock;
    const observations = new LeaseObservations({ now: () => clock.now() });
    const { kubeConfig, namespace, logger } = options;
    this.#group = new ControllerGroup({ kubeConfig, logger, informers: options.informers });
    this.#caches = recoveryCaches(this.#group.informers, namespace);
    // Before routeToRuns: a Lease's new version is seen before the Runs it concerns are enqueued.
    observeLeases(this.#caches.leases, observations);
    const reconciler = new RecoveryReconciler({
      caches: this.#caches,
      observations,
      writes: runWrites(kubeConfig),
      logger,
      metrics: this.metrics,
      now: options.now ?? Date.now,
      clock,
      recheckMs: options.recheckMs,
      reportingGrace: options.reportingGrace,
      automaticRetry: options.automaticRetry,
    });
    // A Run being deleted still has its registration-cleanup finalizer to see to.
    const reconcile = asReconciler(this.#caches.runs, reconciler, { deleting: 'reconcile' });
    this.#controller = new Controller({ name: 'stale-recovery', logger, workers: options.workers ?? 2, reconcile });
    this.#group.add(this.#controller);
    routeToRuns(this.#caches, {
      enqueue: (key) => {
        this.#controller.enqueue(key);
      },
      forget: (uid) => {
        reconciler.forgetRun(uid);
      },
    });
  }

  /** Fills every cache (shared ones are synced already), then starts reconciling: the first decision sees complete caches. */
  async start(): Promise<void> {
    await this.#group.start();
    const resyncMs = this.#options.resyncMs ?? 300_000;
    if (resyncMs > 0) {
      this.#resyncTimer = setInterval(() => {
        for (const run of this.#caches.runs.list(this.#options.namespace)) this.#controller.enqueue(objectKey(run));
      }, resyncMs);
      this.#resyncTimer.unref();
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.#resyncTimer);
    await this.#group.stop();
  }
}
