export { Scheduler } from './scheduler.ts';
export { parseSchedulerFlags, schedulerConfig } from './config.ts';
export type { SchedulerConfig, SchedulerFlags } from './config.ts';
export { schedulerProcess } from './process.ts';
export type { SchedulerProcessOptions } from './process.ts';
export { LATENCY_BUCKETS_SECONDS, SchedulerMetrics } from './metrics.ts';
export { SCHEDULER_RULES } from './rbac.ts';
/** Which Pod template a Runtime's Deployment rolls out, as the scheduler reads it from its ReplicaSets. */
export { currentTemplateHash } from './placement-input.ts';
/** What the scheduler's Run cache keeps of a Run (the scale bench measures it). */
export { SCHEDULER_RUN_PROJECTION } from './scheduler-caches.ts';
