import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ApiException,
  ApiextensionsV1Api,
  CustomObjectsApi,
  loadAllYaml,
  V1CustomResourceDefinition,
  V1ObjectMeta,
} from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { waitFor } from './wait.ts';

const CRD_API_VERSION = 'apiextensions.k8s.io/v1';
const CRD_KIND = 'CustomResourceDefinition';

/**
 * Reads every CustomResourceDefinition from the `*.yaml` files of a directory (files in
 * name order, documents in file order), so that whatever the CRD generator writes is
 * what the tests run against. A missing directory yields no CRDs.
 *
 * The manifests go through client-node's loadAllYaml, which maps wire names to model
 * properties: its typed APIs serialise by model property, so a plain parsed object would
 * silently lose every field whose names differ, `x-kubernetes-validations` among them.
 */
export async function readCrdDirectory(dir: string): Promise<V1CustomResourceDefinition[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((name) => name.endsWith('.yaml')).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const crds: V1CustomResourceDefinition[] = [];
  for (const name of names) {
    const file = join(dir, name);
    const documents = loadAllYaml(await readFile(file, 'utf8')) as unknown[];
    for (const document of documents) {
      if (document === null || document === undefined) continue;
      if (!(document instanceof V1CustomResourceDefinition) || document.metadata?.name === undefined) {
        const { apiVersion, kind } = document as Partial<Record<string, unknown>>;
        throw new Error(`${file}: expected named ${CRD_API_VERSION} ${CRD_KIND} documents, got ${String(apiVersion)} ${String(kind)}`);
      }
      crds.push(document);
    }
  }
  return crds;
}

/**
 * Creates the CRDs, or replaces them if they exist (a long-running local cluster picks up
 * regenerated CRDs), and waits until the API server serves every one of them.
 */
export async function installCrds(
  config: KubeConfig,
  crds: readonly V1CustomResourceDefinition[],
  options: { timeoutMs?: number } = {},
): Promise<void> {
  const api = config.makeApiClient(ApiextensionsV1Api);
  const customObjects = config.makeApiClient(CustomObjectsApi);
  const waitOptions = { timeoutMs: options.timeoutMs ?? 30_000, intervalMs: 50 };
  await Promise.all(crds.map((crd) => applyCrd(api, crd)));
  await Promise.all(
    crds.map(async (crd) => {
      const name = crdName(crd);
      const current = await waitFor(
        `CustomResourceDefinition ${name} to be Established`,
        async () => {
          const read = await api.readCustomResourceDefinition({ name });
          return read.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') === true ? read : undefined;
        },
        waitOptions,
      );
      // Established is not yet served: until its watch cache has initialized, the API
      // server answers 429 "storage is (re)initializing". Wait until a list works.
      const { group, names } = current.spec;
      for (const version of current.spec.versions.filter((v) => v.served)) {
        await waitFor(
          `${names.plural}.${group}/${version.name} to be served`,
          async () => {
            await customObjects.listClusterCustomObject({ group, version: version.name, plural: names.plural, limit: 1 });
            return true;
          },
          waitOptions,
        );
      }
    }),
  );
}

async function applyCrd(api: ApiextensionsV1Api, crd: V1CustomResourceDefinition): Promise<void> {
  const name = crdName(crd);
  try {
    await api.createCustomResourceDefinition({ body: crd });
  } catch (error) {
    if (!(error instanceof ApiException && error.code === 409)) throw error;
    const existing = await api.readCustomResourceDefinition({ name });
    // A replace must carry the current resourceVersion; copy rather than mutate the input.
    const metadata = Object.assign(new V1ObjectMeta(), crd.metadata, { resourceVersion: existing.metadata?.resourceVersion });
    await api.replaceCustomResourceDefinition({ name, body: Object.assign(new V1CustomResourceDefinition(), crd, { metadata }) });
  }
}

function crdName(crd: V1CustomResourceDefinition): string {
  const name = crd.metadata?.name;
  if (name === undefined) throw new Error('CustomResourceDefinition without metadata.name');
  return name;
}
