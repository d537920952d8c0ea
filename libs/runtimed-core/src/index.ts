// Starting runtimed from its config.
export { loadConfig } from './config.ts';
export { startRuntimed } from './runtimed.ts';
export { RUNTIMED_ROLE_RULES } from './rbac.ts';

// Metrics.
export { NO_METRICS } from './metrics.ts';
export { startPrometheusMetrics } from './otel-metrics.ts';

// Run ownership: the pod lease and the fenced Run writes.
export { PodLease } from './pod-lease.ts';
export { NotOwnerError, RunClient } from './run-client.ts';

// What runtimed's Run cache keeps (the footprint benchmark measures it).
export { runtimedRunProjection } from './run-cache.ts';
