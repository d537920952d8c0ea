import { readFile } from 'node:fs/promises';
import { ApiException, CustomObjectsApi, KubernetesObjectApi } from '@kubernetes/client-node';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, RUN_PLURAL } from '@kruntimes/api';
import { parseAllDocuments } from 'yaml';
import { waitFor } from './wait.ts';

/**
 * Creates every object of the YAML files (documents in file order), replacing those that
 * exist: the chart's admission policies, exactly as the chart ships them
 * (deploy/charts/kruntimes/admission), so tests run against them.
 */
export async function applyManifestFiles(config: KubeConfig, files: readonly string[]): Promise<number> {
  const api = KubernetesObjectApi.makeApiClient(config);
  let applied = 0;
  for (const file of files) {
    for (const document of parseAllDocuments(await readFile(file, 'utf8'))) {
      const object = document.toJS() as KubernetesObject | null;
      if (object === null) continue;
      if (object.apiVersion === undefined || object.kind === undefined || object.metadata?.name === undefined) {
        throw new Error(`${file}: a document without apiVersion, kind or metadata.name`);
      }
      try {
        await api.create(object);
      } catch (error) {
        if (!(error instanceof ApiException && error.code === 409)) throw error;
        const existing = await api.read({ apiVersion: object.apiVersion, kind: object.kind, metadata: { name: object.metadata.name } });
        // A plain object parsed from YAML, ours to change.
        object.metadata.resourceVersion = existing.metadata?.resourceVersion ?? '';
        await api.replace(object);
      }
      applied += 1;
    }
  }
  return applied;
}

/**
 * Waits until the API server enforces the admission policies just applied (it loads them
 * asynchronously): a dry-run create of a Run shows `spec.creator` stamped. Until then a
 * Run could meet the validating policy without the mutating one.
 */
export async function waitForRunCreatorPolicy(config: KubeConfig, options: { timeoutMs: number }): Promise<void> {
  const api = config.makeApiClient(CustomObjectsApi);
  const body = {
    apiVersion: `${API_GROUP}/${API_VERSION}`,
    kind: 'Run',
    metadata: { name: 'admission-probe' },
    spec: { runtime: 'probe', source: { inline: 'true' }, mode: { task: {} } },
  };
  await waitFor(
    'the admission policies to be enforced (a dry-run Run gets spec.creator)',
    async () => {
      try {
        const created = (await api.createNamespacedCustomObject({
          group: API_GROUP,
          version: API_VERSION,
          namespace: 'default',
          plural: RUN_PLURAL,
          body,
          dryRun: 'All',
        })) as { spec?: { creator?: unknown } };
        return created.spec?.creator === undefined ? undefined : true;
      } catch (error) {
        // The validating policy alone refuses the unstamped Run: not ready yet.
        if (error instanceof ApiException && error.code === 403) return undefined;
        throw error;
      }
    },
    { timeoutMs: options.timeoutMs, intervalMs: 200 },
  );
}
