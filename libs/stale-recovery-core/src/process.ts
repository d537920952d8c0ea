import { serviceProcess } from '@kruntimes/controller-runtime';
import type { ControllerLogger, Manager, ManagerLogger, ServiceProcessOptions } from '@kruntimes/controller-runtime';
import type { StaleRecoveryConfig } from './config.ts';
import { RecoveryMetrics } from './metrics.ts';
import { StaleRecovery } from './stale-recovery.ts';

export type StaleRecoveryProcessOptions = ServiceProcessOptions<StaleRecoveryConfig, ManagerLogger & ControllerLogger>;

/** The stale-recovery process (serviceProcess): while it leads, StaleRecovery over the Manager's shared informers. */
export function staleRecoveryProcess(options: StaleRecoveryProcessOptions): Manager {
  const metrics = new RecoveryMetrics();
  const { workers, resyncMs, automaticRetry } = options.config;
  return serviceProcess(options, {
    component: 'stale-recovery',
    renderMetrics: () => metrics.render(),
    controllers: (shared) => [new StaleRecovery({ ...shared, metrics, workers, resyncMs, automaticRetry })],
  });
}
