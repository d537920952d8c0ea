// Authorization as the dataplane will ask it ("Request" in docs/invoke-contract.md): SelfSubjectAccessReview
// answers per user according to RBAC, and matches what the API server then enforces.
import { AuthorizationV1Api, KubernetesObjectApi, V1SelfSubjectAccessReview } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, RUN_PLURAL } from '@kruntimes/api';
import { Cluster } from '../src/cluster.ts';
import type { TestNamespace } from '../src/cluster.ts';
import { rejection, RunClient, taskSpec } from './support/runs.ts';

const cluster = Cluster.fromEnvironment();
let namespace: TestNamespace;

beforeEach(async () => {
  namespace = await cluster.createNamespace({ prefix: 'rbac' });
});
afterEach(async () => {
  await namespace.delete();
});

async function mayGetRuns(config: KubeConfig, ns: string): Promise<boolean> {
  const review = Object.assign(new V1SelfSubjectAccessReview(), {
    spec: { resourceAttributes: { group: API_GROUP, resource: RUN_PLURAL, verb: 'get', namespace: ns } },
  });
  const answer = await config.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({ body: review });
  return answer.status?.allowed ?? false;
}

test('SelfSubjectAccessReview answers `get runs` per user according to RBAC', async () => {
  const admin = KubernetesObjectApi.makeApiClient(cluster.kubeConfig());
  await admin.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'run-reader', namespace: namespace.name },
    rules: [{ apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list', 'watch'] }],
  });
  await admin.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'alice-reads-runs', namespace: namespace.name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'run-reader' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' }],
  });
  const alice = cluster.kubeConfig('alice');
  const bob = cluster.kubeConfig('bob');

  expect(await mayGetRuns(alice, namespace.name)).toBe(true);
  expect(await mayGetRuns(bob, namespace.name)).toBe(false);
  // The grant is namespaced: alice may not read Runs elsewhere.
  expect(await mayGetRuns(alice, 'default')).toBe(false);

  // And the API server enforces what the reviews said.
  await new RunClient(cluster.kubeConfig(), namespace.name).create('r', taskSpec());
  expect((await new RunClient(alice, namespace.name).get('r')).metadata.name).toBe('r');
  expect((await rejection(new RunClient(bob, namespace.name).get('r'))).code).toBe(403);
});
