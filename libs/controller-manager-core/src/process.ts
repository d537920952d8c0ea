import type { KubeConfig } from '@kubernetes/client-node';
import { Manager, ProcessMetrics, healthEndpointRunnable, metricsEndpointRunnable } from '@kruntimes/controller-runtime';
import type { ManagerLogger } from '@kruntimes/controller-runtime';
import { ScheduleController, ScheduleMetrics } from '@kruntimes/schedule-core';
import type { ControllerManagerConfig } from './config.ts';
import { InputMetrics } from './input-metrics.ts';
import { ControllerManager } from './manager.ts';
import { ManagerMetrics } from './metrics.ts';
import { OriginController } from './origin-controller.ts';

export interface ControllerManagerProcessOptions {
  config: ControllerManagerConfig;
  kubeConfig: KubeConfig;
  logger: ManagerLogger;
}

/**
 * The controller-manager process: its health probes and metrics on every replica; while it leads, over one
 * set of shared informers, the Runtime, finished-Run, ArtifactStore and RunInput
 * controllers (ControllerManager), the RunSchedule controller and the origin controller
 * (Runs synced from `krt run --local`: Pending -> their recorded terminal phase).
 */
export function controllerManagerProcess({ config, kubeConfig, logger }: ControllerManagerProcessOptions): Manager {
  const manager = new Manager({ kubeConfig, logger, component: 'the controllers', leaderElection: config.leaderElection });
  // Served by every replica; only the leader's caches give it series.
  const metrics = new ManagerMetrics();
  const scheduleMetrics = new ScheduleMetrics();
  const inputMetrics = new InputMetrics();
  if (config.healthAddress !== undefined) manager.add(healthEndpointRunnable(config.healthAddress, manager, logger));
  if (config.metricsAddress !== undefined) {
    const processMetrics = new ProcessMetrics();
    const render = (): string =>
      metrics.render() +
      scheduleMetrics.render() +
      inputMetrics.render() +
      manager.leaderElectionMetrics.render() +
      processMetrics.render();
    manager.add(metricsEndpointRunnable(config.metricsAddress, render, logger));
  }
  const shared = {
    kubeConfig,
    informers: manager.informers,
    ...(config.namespace === undefined ? {} : { namespace: config.namespace }),
    logger,
  };
  const { workload, finishedRunsPerRuntime, internalCa } = config;
  manager.add(new ControllerManager({ ...shared, workload, finishedRunsPerRuntime, internalCa, metrics, inputMetrics }));
  manager.add(new ScheduleController({ ...shared, metrics: scheduleMetrics }));
  manager.add(new OriginController(shared));
  return manager;
}
