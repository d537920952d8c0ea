export * from './artifact-objects.ts';
export * from './resolve-artifact-store.ts';
