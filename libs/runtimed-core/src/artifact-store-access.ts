import { CoreV1Api } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { ArtifactObjects, resolveArtifactStore } from '@kruntimes/artifacts-core';
import { kruntimesClients } from '@kruntimes/run-client';
import type { StoreResolver } from './artifact-store.ts';
import { cachedStoreResolver } from './artifact-store-cache.ts';

/**
 * The ArtifactStores of runtimed's namespace, read with runtimed's own identity (get
 * artifactstores, get secrets: RUNTIMED_ROLE_RULES) and reused briefly. The credentials
 * stay inside the S3 client; nothing here logs or returns them.
 */
export function kubernetesStoreResolver(kubeConfig: KubeConfig): StoreResolver {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const stores = kruntimesClients(kubeConfig).artifactStores;
  return cachedStoreResolver(async (namespace, name) => {
    const { location, credentials } = await resolveArtifactStore(core, stores, namespace, name);
    return { prefix: location.prefix, objects: new ArtifactObjects(location, credentials) };
  });
}
