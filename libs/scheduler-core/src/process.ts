import { serviceProcess } from '@kruntimes/controller-runtime';
import type { ControllerLogger, Manager, ManagerLogger, ServiceProcessOptions } from '@kruntimes/controller-runtime';
import type { SchedulerConfig } from './config.ts';
import { SchedulerMetrics } from './metrics.ts';
import { Scheduler } from './scheduler.ts';

export type SchedulerProcessOptions = ServiceProcessOptions<SchedulerConfig, ManagerLogger & ControllerLogger>;

/** The scheduler process (serviceProcess): while it leads, the Scheduler over the Manager's shared informers. */
export function schedulerProcess(options: SchedulerProcessOptions): Manager {
  const metrics = new SchedulerMetrics();
  const { workers, sourceWaitMs } = options.config;
  return serviceProcess(options, {
    component: 'the scheduler',
    renderMetrics: () => metrics.render(),
    controllers: (shared) => [new Scheduler({ ...shared, metrics, workers, sourceWaitMs })],
  });
}
