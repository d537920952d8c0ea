export * from './collection.ts';
export * from './manager.ts';
export * from './runtime-status.ts';
export * from './rbac.ts';
