import { serviceProcess } from '@kruntimes/controller-runtime';
import type { Manager, ManagerLogger, ServiceProcessOptions } from '@kruntimes/controller-runtime';
import { ScheduleController, ScheduleMetrics } from '@kruntimes/schedule-core';
import type { ControllerManagerConfig } from './config.ts';
import { InputMetrics } from './input-metrics.ts';
import { ControllerManager } from './manager.ts';
import { ManagerMetrics } from './metrics.ts';
import { OriginController } from './origin-controller.ts';

export type ControllerManagerProcessOptions = ServiceProcessOptions<ControllerManagerConfig, ManagerLogger>;

/**
 * The controller-manager process (serviceProcess): while it leads, over one set of shared
 * informers, the Runtime, finished-Run, ArtifactStore and RunInput controllers
 * (ControllerManager), the RunSchedule controller and the origin controller (Runs synced
 * from `krt run --local`: Pending -> their recorded terminal phase).
 */
export function controllerManagerProcess(options: ControllerManagerProcessOptions): Manager {
  // Served by every replica; only the leader's caches give it series.
  const metrics = new ManagerMetrics();
  const scheduleMetrics = new ScheduleMetrics();
  const inputMetrics = new InputMetrics();
  const { workload, finishedRunsPerRuntime, internalCa } = options.config;
  return serviceProcess(options, {
    component: 'the controllers',
    renderMetrics: () => metrics.render() + scheduleMetrics.render() + inputMetrics.render(),
    controllers: (shared) => [
      new ControllerManager({ ...shared, workload, finishedRunsPerRuntime, internalCa, metrics, inputMetrics }),
      new ScheduleController({ ...shared, metrics: scheduleMetrics }),
      new OriginController(shared),
    ],
  });
}
