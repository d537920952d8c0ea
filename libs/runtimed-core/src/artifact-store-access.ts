import type { KubeConfig } from '@kubernetes/client-node';
import { KruntimesError } from '@kruntimes/errors';
import type { StoreResolver } from './artifact-store.ts';

/** Placeholder until the store client of @kruntimes/artifacts-core lands. */
export function kubernetesStoreResolver(_kubeConfig: KubeConfig): StoreResolver {
  return (namespace, name) =>
    Promise.reject(new KruntimesError('ArtifactStoreUnavailable', `ArtifactStore ${namespace}/${name}: no store client`));
}
