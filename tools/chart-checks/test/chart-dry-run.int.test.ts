import { ApiException, ApisApi, KubernetesObjectApi, PatchStrategy } from '@kubernetes/client-node';
import { Cluster } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHART_DIR, RELEASE, VARIANTS, ensureHelm, renderChart, runHelm, singleNamespace } from '../src/index.ts';
import type { KubeObject } from '../src/index.ts';

// The rendered chart, for each values variant, sent to the real API server as a
// server-side apply with dryRun=All (what `kubectl apply --server-side --dry-run=server`
// does): the API server defaults, validates (OpenAPI, CEL, admission) and persists nothing.
// The control plane has the kruntimes CRDs; kinds of CRDs it does not have (cert-manager,
// prometheus-operator) are checked by the unit tests only and listed here.
const cluster = Cluster.fromEnvironment();
const admin = cluster.kubeConfig();
const objects = KubernetesObjectApi.makeApiClient(admin);
const OPTIONAL_CRD_KINDS = ['Certificate', 'Issuer', 'PodMonitor', 'ServiceMonitor'];

let helm = '';
let release: TestNamespace;
let runtimes: TestNamespace;
let servedGroups = new Set<string>();

beforeAll(async () => {
  // A fresh machine builds helm here (minutes) unless the chart-checks unit tests did first.
  helm = await ensureHelm();
  release = await cluster.createNamespace({ prefix: 'chart-release' });
  runtimes = await cluster.createNamespace({ prefix: 'chart-runtimes' });
  const groups = await admin.makeApiClient(ApisApi).getAPIVersions();
  servedGroups = new Set(['', ...groups.groups.map((group) => group.name)]);
}, 900_000);

afterAll(async () => {
  await release.delete();
  await runtimes.delete();
});

function groupOf(apiVersion: string): string {
  return apiVersion.includes('/') ? (apiVersion.split('/')[0] ?? '') : '';
}

async function dryRunApply(object: KubeObject): Promise<string | undefined> {
  try {
    await objects.patch(object, undefined, 'All', 'chart-checks', true, PatchStrategy.ServerSideApply);
    return undefined;
  } catch (error) {
    if (error instanceof ApiException)
      return `${object.kind} ${object.metadata.namespace ?? ''}/${object.metadata.name}: ${String(error.code)} ${String(error.body)}`;
    throw error;
  }
}

const variants = (): [string, string[]][] => [
  ...Object.entries(VARIANTS).map(([name, set]): [string, string[]] => [name, [...set, `runtimes.namespaces={${runtimes.name}}`]]),
  ['single namespace', ['gateway.resolveMode=endpoints', ...singleNamespace(runtimes.name)]],
];

describe.each([...Object.keys(VARIANTS), 'single namespace'])('the chart with %s values', (variant) => {
  it('is accepted by the API server (server-side apply, dry run)', async () => {
    const set = variants().find(([name]) => name === variant)?.[1] ?? [];
    const rendered = await renderChart(helm, release.name, [
      ...set,
      `gateway.networkPolicy.allowedNamespaces={${runtimes.name}}`,
      `global.networkPolicy.metricsNamespaces={${release.name}}`,
      'global.serviceMonitor.enabled=true',
    ]);
    const served = rendered.filter((object) => servedGroups.has(groupOf(object.apiVersion)));
    const skipped = rendered.filter((object) => !servedGroups.has(groupOf(object.apiVersion)));
    expect([...new Set(skipped.map((object) => object.kind))].filter((kind) => !OPTIONAL_CRD_KINDS.includes(kind))).toEqual([]);
    expect(served.length).toBeGreaterThan(20);
    // The admission policies and their bindings are among what the API server accepts.
    expect(
      served
        .filter((object) => object.apiVersion === 'admissionregistration.k8s.io/v1')
        .map((object) => object.kind)
        .sort(),
    ).toEqual([
      'MutatingAdmissionPolicy',
      'MutatingAdmissionPolicyBinding',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
      'ValidatingAdmissionPolicyBinding',
    ]);
    const refused: string[] = [];
    for (const object of served) {
      const problem = await dryRunApply(object);
      if (problem !== undefined) refused.push(problem);
    }
    expect(refused).toEqual([]);
  });
});

it("helm's own install, as a server-side dry run against the API server, succeeds and prints the notes", async () => {
  const dir = await mkdtemp(join(tmpdir(), 'chart-helm-'));
  try {
    const { admin: kubeconfig = '' } = await cluster.writeKubeconfigs(dir);
    const result = await runHelm(helm, [
      'install',
      RELEASE,
      CHART_DIR,
      '--dry-run=server',
      '--kubeconfig',
      kubeconfig,
      '--namespace',
      release.name,
      '--set',
      `runtimes.namespaces={${runtimes.name}}`,
      '--set',
      `gateway.networkPolicy.allowedNamespaces={${runtimes.name}}`,
      // The test control plane already enforces the chart's admission policies (the same
      // file), which helm would refuse to adopt; the dry-run apply above checks them.
      '--set',
      'admission.policies=false',
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`Runtime namespaces (runtimed's ServiceAccount, RoleBinding and NetworkPolicy): ${runtimes.name}`);
    expect(result.stdout).toContain(`https://runtime-gateway.${release.name}.svc`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

it('a manifest the API server would refuse is refused by the dry run (the check has teeth)', async () => {
  const [deployment] = (await renderChart(helm, release.name, [])).filter((object) => object.kind === 'Deployment');
  if (deployment === undefined) throw new Error('no Deployment rendered');
  const broken = structuredClone(deployment) as KubeObject & { spec: { selector: { matchLabels: Record<string, string> } } };
  broken.spec.selector.matchLabels = { 'app.kubernetes.io/name': 'something-else' };
  expect(await dryRunApply(broken)).toMatch(/422.*selector/s);
});
