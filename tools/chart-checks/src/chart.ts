import { parseAllDocuments } from 'yaml';
import { CHART_DIR, runHelm } from './workspace.ts';

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: unknown;
}

/** The value variants every check runs on, so that no supported combination of values goes unrendered: `--set` lists. */
export const VARIANTS: Readonly<Record<string, readonly string[]>> = {
  default: [],
  'gateway disabled': ['gateway.enabled=false'],
  'cert-manager': [
    'global.internalCA.existingSecret=',
    'global.internalCA.certManager.enabled=true',
    'gateway.tls.existingSecret=',
    'gateway.tls.certManager.enabled=true',
  ],
  'existing Secrets': ['global.internalCA.existingSecret=my-internal-ca', 'gateway.tls.existingSecret=my-gateway-tls'],
};

/** The variant that watches one namespace only: Roles instead of ClusterRoles. */
export function singleNamespace(namespace: string): string[] {
  return [`global.watchNamespace=${namespace}`, `runtimes.namespaces={${namespace}}`];
}

export const RELEASE = 'kruntimes';

/** `helm template` of the chart into objects; throws with helm's message when it fails. */
export async function renderChart(helm: string, namespace: string, set: readonly string[]): Promise<KubeObject[]> {
  const result = await runHelm(helm, [
    'template',
    RELEASE,
    CHART_DIR,
    '--namespace',
    namespace,
    ...set.flatMap((value) => ['--set', value]),
  ]);
  if (result.code !== 0) throw new Error(`helm template failed: ${result.stderr}`);
  return parseAllDocuments(result.stdout)
    .map((document) => document.toJS() as KubeObject | null)
    .filter((object): object is KubeObject => object !== null);
}
