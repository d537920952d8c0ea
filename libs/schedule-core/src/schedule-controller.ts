import { LABELS } from '@kruntimes/api';
import type { KubeConfig } from '@kubernetes/client-node';
import { Controller, ControllerGroup, asReconciler } from '@kruntimes/controller-runtime';
import type { ControllerLogger, InformerFactory } from '@kruntimes/controller-runtime';
import { kruntimesClients } from '@kruntimes/run-client';
import type { ScheduleMetrics } from './metrics.ts';
import { ScheduleReconciler } from './schedule-reconciler.ts';

export { DEFAULT_REQUEUE_CAP_MS } from './schedule-reconciler.ts';

export interface ScheduleControllerOptions {
  kubeConfig: KubeConfig;
  /** The Manager's shared informers, which it starts first and stops last; default: this one's own, started and stopped with it. */
  informers?: InformerFactory;
  /** Watch one namespace; all namespaces when undefined. */
  namespace?: string;
  logger: ControllerLogger;
  /** The clock the schedules are evaluated on (tests move it); Date.now by default. */
  now?: () => number;
  metrics?: ScheduleMetrics;
  workers?: number;
  /** Longest wait before a schedule is evaluated again. */
  requeueCapMs?: number;
}

/**
 * The `run-schedule` controller: a ScheduleReconciler over the RunSchedule cache and the
 * cache of the Runs that name a schedule, each Run's events enqueuing its schedule. Run
 * this only while holding the leader Lease.
 */
export class ScheduleController {
  readonly #group: ControllerGroup;

  constructor(options: ScheduleControllerOptions) {
    const { kubeConfig, namespace, logger } = options;
    this.#group = new ControllerGroup({ kubeConfig, logger, informers: options.informers });
    const schedules = this.#group.informers.runSchedules({ namespace });
    // Only Runs that name a schedule: the controller never needs the others.
    const runs = this.#group.informers.runs({ namespace, labelSelector: LABELS.schedule, name: 'scheduled-runs' });
    const reconciler = new ScheduleReconciler({
      runs,
      clients: kruntimesClients(kubeConfig),
      logger,
      now: options.now ?? Date.now,
      metrics: options.metrics,
      requeueCapMs: options.requeueCapMs,
    });
    const controller = new Controller({
      name: 'run-schedule',
      logger,
      workers: options.workers ?? 2,
      reconcile: asReconciler(schedules, reconciler),
    });
    this.#group.add(controller);
    const enqueue = (key: string): void => {
      controller.enqueue(key);
    };
    schedules.enqueueTo(enqueue);
    runs.enqueueTo(enqueue, (run) => {
      const schedule = run.metadata.labels?.[LABELS.schedule];
      return schedule === undefined ? undefined : `${run.metadata.namespace ?? ''}/${schedule}`;
    });
  }

  /** Fills the caches (shared ones are synced already), then starts the controller. */
  start(): Promise<void> {
    return this.#group.start();
  }

  stop(): Promise<void> {
    return this.#group.stop();
  }
}
