import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ApiException, KubernetesObjectApi } from '@kubernetes/client-node';
import type { KubeConfig, KubernetesObject, V1CustomResourceDefinition } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { waitFor } from './wait.ts';

const CRD_API_VERSION = 'apiextensions.k8s.io/v1';
const CRD_KIND = 'CustomResourceDefinition';

/**
 * A CRD as read from a manifest. Kept as a plain KubernetesObject rather than client-node's
 * V1CustomResourceDefinition class: it is sent as read, never built through a constructor.
 */
export type CrdManifest = KubernetesObject & { apiVersion: typeof CRD_API_VERSION; kind: typeof CRD_KIND; metadata: { name: string } };

/**
 * Reads every CustomResourceDefinition from the `*.yaml` files of a directory (files in
 * name order, documents in file order), so that whatever the CRD generator writes is
 * what the tests run against. A missing directory yields no CRDs.
 */
export async function readCrdDirectory(dir: string): Promise<CrdManifest[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((name) => name.endsWith('.yaml')).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const crds: CrdManifest[] = [];
  for (const name of names) {
    const file = join(dir, name);
    for (const document of parseAllDocuments(await readFile(file, 'utf8'))) {
      if (document.errors.length > 0) throw new Error(`${file}: ${document.errors.map((e) => e.message).join('; ')}`);
      const value = document.toJS() as unknown;
      if (value === null || value === undefined) continue;
      const crd = value as KubernetesObject;
      if (crd.apiVersion !== CRD_API_VERSION || crd.kind !== CRD_KIND || typeof crd.metadata?.name !== 'string') {
        throw new Error(`${file}: expected a named ${CRD_API_VERSION} ${CRD_KIND}, got ${String(crd.apiVersion)} ${String(crd.kind)}`);
      }
      crds.push(crd as CrdManifest);
    }
  }
  return crds;
}

/**
 * Creates the CRDs, or replaces them if they exist (a long-running local cluster picks up
 * regenerated CRDs), and waits until the API server serves every one of them.
 */
export async function installCrds(config: KubeConfig, crds: readonly CrdManifest[], options: { timeoutMs?: number } = {}): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(config);
  await Promise.all(crds.map((crd) => applyCrd(api, crd)));
  await Promise.all(
    crds.map((crd) =>
      waitFor(
        `CustomResourceDefinition ${crd.metadata.name} to be Established`,
        async () => {
          const current = await api.read<V1CustomResourceDefinition>({ apiVersion: CRD_API_VERSION, kind: CRD_KIND, metadata: { name: crd.metadata.name } });
          const established = current.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
          return established === true ? true : undefined;
        },
        { timeoutMs: options.timeoutMs ?? 30_000, intervalMs: 50 },
      ),
    ),
  );
}

async function applyCrd(api: KubernetesObjectApi, crd: CrdManifest): Promise<void> {
  try {
    await api.create(crd);
  } catch (error) {
    if (!(error instanceof ApiException && error.code === 409)) throw error;
    const existing = await api.read<V1CustomResourceDefinition>({ apiVersion: CRD_API_VERSION, kind: CRD_KIND, metadata: { name: crd.metadata.name } });
    const resourceVersion = existing.metadata?.resourceVersion;
    if (resourceVersion === undefined) throw new Error(`CustomResourceDefinition ${crd.metadata.name} has no resourceVersion`);
    const replacement = structuredClone(crd);
    replacement.metadata.resourceVersion = resourceVersion;
    await api.replace(replacement);
  }
}
