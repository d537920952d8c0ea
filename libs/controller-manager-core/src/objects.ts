import type { KubernetesObject } from '@kubernetes/client-node';
import type { ArtifactStore, RunInput } from '@kruntimes/api';

// The cached object types the caches and the reconcilers share, here so that caches.ts
// does not import the reconcilers that import it.
export type ArtifactStoreObject = ArtifactStore & KubernetesObject;
export type RunInputObject = RunInput & KubernetesObject;
