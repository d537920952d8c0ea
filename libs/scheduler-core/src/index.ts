export { Scheduler } from './scheduler.ts';
export { LATENCY_BUCKETS_SECONDS, SchedulerMetrics } from './metrics.ts';
export { SCHEDULER_RULES } from './rbac.ts';
