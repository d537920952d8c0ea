export * from './admission-gate.ts';
export * from './assume-cache.ts';
export * from './metrics.ts';
export * from './placement.ts';
export * from './scheduler.ts';
export * from './rbac.ts';
export { rfc3339, runInfo } from './placement-input.ts';
export type { RunObject, RuntimeObject } from './scheduler-caches.ts';
