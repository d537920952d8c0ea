// The controller-manager process: flags, controllers, RBAC and metrics.
export { controllerManagerConfig, parseControllerManagerFlags } from './config.ts';
export { controllerManagerProcess } from './process.ts';
export { ControllerManager } from './manager.ts';
export { CONTROLLER_MANAGER_RULES } from './rbac.ts';
export { renderManagerMetrics } from './metrics.ts';

// Controllers other processes also run.
export { InputMetrics } from './input-metrics.ts';
export { OriginController } from './origin-controller.ts';
/** What the controller-manager's Run cache keeps of a Run (the scale bench measures it). */
export { MANAGER_RUN_PROJECTION } from './caches.ts';
