export * from './assume-cache.ts';
export * from './metrics.ts';
export * from './placement.ts';
export * from './scheduler.ts';
export * from './rbac.ts';
