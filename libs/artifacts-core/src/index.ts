export * from './artifact-objects.ts';
export * from './resolve-artifact-store.ts';
export * from './cleanup.ts';
