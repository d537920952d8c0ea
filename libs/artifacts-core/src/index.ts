// Reading and writing artifact objects in a Run's ArtifactStore.
export { ArtifactObjects } from './artifact-objects.ts';
export type { ArtifactStoreCredentials } from './artifact-objects.ts';
export { ArtifactStoreResolveError, artifactStoreLocation, readCredentials, resolveArtifactStore } from './resolve-artifact-store.ts';

// Deciding which stored objects retention deletes.
export { checkpointAttemptsNeeded, decideArtifactCleanup } from './cleanup.ts';
export type { LiveRunAttempt, StoredObject } from './cleanup.ts';
