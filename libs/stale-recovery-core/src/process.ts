import type { KubeConfig } from '@kubernetes/client-node';
import { Manager, ProcessMetrics, healthEndpointRunnable, metricsEndpointRunnable } from '@kruntimes/controller-runtime';
import type { ControllerLogger, ManagerLogger } from '@kruntimes/controller-runtime';
import type { StaleRecoveryConfig } from './config.ts';
import { RecoveryMetrics } from './metrics.ts';
import { StaleRecovery } from './stale-recovery.ts';

export interface StaleRecoveryProcessOptions {
  config: StaleRecoveryConfig;
  kubeConfig: KubeConfig;
  logger: ManagerLogger & ControllerLogger & { info(object: object, message: string): void };
}

/**
 * The stale-recovery process: its health probes and metrics on every replica; while it
 * leads, StaleRecovery over the Manager's shared informers.
 */
export function staleRecoveryProcess({ config, kubeConfig, logger }: StaleRecoveryProcessOptions): Manager {
  const metrics = new RecoveryMetrics();
  const processMetrics = new ProcessMetrics();
  const manager = new Manager({ kubeConfig, logger, component: 'stale-recovery', leaderElection: config.leaderElection });
  if (config.healthAddress !== undefined) manager.add(healthEndpointRunnable(config.healthAddress, manager, logger));
  if (config.metricsAddress !== undefined) {
    const render = (): string => metrics.render() + manager.leaderElectionMetrics.render() + processMetrics.render();
    manager.add(metricsEndpointRunnable(config.metricsAddress, render, logger));
  }
  manager.add(
    new StaleRecovery({
      kubeConfig,
      informers: manager.informers,
      ...(config.namespace === undefined ? {} : { namespace: config.namespace }),
      logger,
      metrics,
      workers: config.workers,
      resyncMs: config.resyncMs,
      automaticRetry: config.automaticRetry,
    }),
  );
  return manager;
}
