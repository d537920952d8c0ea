import type { KubeConfig } from '@kubernetes/client-node';
import { healthEndpointRunnable } from './health-endpoint.ts';
import type { InformerFactory } from './informer-factory.ts';
import { Manager } from './manager.ts';
import type { ManagerLogger, Runnable } from './manager.ts';
import { metricsEndpointRunnable } from './metrics-endpoint.ts';
import { ProcessMetrics } from './process-metrics.ts';
import type { ServiceConfig } from './service-flags.ts';

/** What each controller of a service is built with: the Manager's shared informers, over config.namespace. */
export interface ServiceControllerOptions<Logger extends ManagerLogger> {
  kubeConfig: KubeConfig;
  informers: InformerFactory;
  /** Absent: every namespace. */
  namespace?: string;
  logger: Logger;
}

/** What a service's process function is given (its main builds it). */
export interface ServiceProcessOptions<Config extends ServiceConfig, Logger extends ManagerLogger> {
  config: Config;
  kubeConfig: KubeConfig;
  logger: Logger;
}

/** What makes a service itself: its name, its metrics, its controllers. */
export interface ServiceParts<Logger extends ManagerLogger> {
  /** The leader-elected work in log lines, e.g. `the scheduler`. */
  component: string;
  /** The service's own metrics; its endpoint serves them before the Lease's and the process's. */
  renderMetrics: () => string;
  /** The service's controllers, started in this order once it leads and its informers synced. */
  controllers: (shared: ServiceControllerOptions<Logger>) => Runnable[];
}

/**
 * A leader-elected service's Manager: campaigning for config.leaderElection, with the health
 * probes and the metrics endpoint on every replica (a standby's series are its process's
 * and its Lease's), and the service's controllers, which run only while it leads.
 * `runUntilSignalled` runs it until SIGTERM or SIGINT.
 */
export function serviceProcess<Logger extends ManagerLogger>(
  { config, kubeConfig, logger }: ServiceProcessOptions<ServiceConfig, Logger>,
  service: ServiceParts<Logger>,
): Manager {
  const manager = new Manager({ kubeConfig, logger, component: service.component, leaderElection: config.leaderElection });
  if (config.healthAddress !== undefined) manager.add(healthEndpointRunnable(config.healthAddress, manager, logger));
  if (config.metricsAddress !== undefined) {
    const processMetrics = new ProcessMetrics();
    const render = (): string => service.renderMetrics() + manager.leaderElectionMetrics.render() + processMetrics.render();
    manager.add(metricsEndpointRunnable(config.metricsAddress, render, logger));
  }
  const namespace = config.namespace === undefined ? {} : { namespace: config.namespace };
  for (const controller of service.controllers({ kubeConfig, informers: manager.informers, ...namespace, logger })) manager.add(controller);
  return manager;
}
