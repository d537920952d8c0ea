import type { KubeConfig } from '@kubernetes/client-node';
import { Manager, ProcessMetrics, healthEndpointRunnable, metricsEndpointRunnable } from '@kruntimes/controller-runtime';
import type { ControllerLogger, ManagerLogger } from '@kruntimes/controller-runtime';
import type { SchedulerConfig } from './config.ts';
import { SchedulerMetrics } from './metrics.ts';
import { Scheduler } from './scheduler.ts';

export interface SchedulerProcessOptions {
  config: SchedulerConfig;
  kubeConfig: KubeConfig;
  logger: ManagerLogger & ControllerLogger;
}

/**
 * The scheduler process: its health probes and metrics on every replica (a standby's
 * series are its process's and its Lease's); while it leads, the Scheduler over the
 * Manager's shared informers.
 */
export function schedulerProcess({ config, kubeConfig, logger }: SchedulerProcessOptions): Manager {
  const metrics = new SchedulerMetrics();
  const processMetrics = new ProcessMetrics();
  const manager = new Manager({ kubeConfig, logger, component: 'the scheduler', leaderElection: config.leaderElection });
  if (config.healthAddress !== undefined) manager.add(healthEndpointRunnable(config.healthAddress, manager, logger));
  if (config.metricsAddress !== undefined) {
    const render = (): string => metrics.render() + manager.leaderElectionMetrics.render() + processMetrics.render();
    manager.add(metricsEndpointRunnable(config.metricsAddress, render, logger));
  }
  manager.add(
    new Scheduler({
      kubeConfig,
      informers: manager.informers,
      ...(config.namespace === undefined ? {} : { namespace: config.namespace }),
      logger,
      metrics,
      workers: config.workers,
      sourceWaitMs: config.sourceWaitMs,
    }),
  );
  return manager;
}
