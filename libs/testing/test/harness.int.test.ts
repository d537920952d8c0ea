// The harness itself: identities, CRD installation, what the control plane serves.
import { ApiextensionsV1Api, AuthenticationV1Api, CoreV1Api, V1SelfSubjectReview } from '@kubernetes/client-node';
import type { V1JSONSchemaProps, V1ValidationRule } from '@kubernetes/client-node';
import { Cluster } from '../src/cluster.ts';

const cluster = Cluster.fromEnvironment();

test('the API server is on loopback and the admin can read the cluster', async () => {
  expect(new URL(cluster.server).hostname).toBe('127.0.0.1');
  const list = await cluster.kubeConfig().makeApiClient(CoreV1Api).listNamespace();
  expect(list.items.map((n) => n.metadata?.name)).toContain('kube-system');
});

test.each([
  ['admin', ['system:masters', 'system:authenticated']],
  ['alice', ['system:authenticated']],
  ['bob', ['system:authenticated']],
])('each kubeconfig authenticates as its own user: %s', async (user, groups) => {
  const review = await cluster
    .kubeConfig(user)
    .makeApiClient(AuthenticationV1Api)
    .createSelfSubjectReview({ body: new V1SelfSubjectReview() });
  expect(review.status?.userInfo?.username).toBe(user);
  expect([...(review.status?.userInfo?.groups ?? [])].sort()).toEqual([...groups].sort());
});

test('users without a grant are forbidden', async () => {
  const error = await cluster
    .kubeConfig('bob')
    .makeApiClient(CoreV1Api)
    .listNamespace()
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(error).toMatchObject({ code: 403 });
});

test('the generated CRDs are installed with their CEL rules intact', async () => {
  const api = cluster.kubeConfig().makeApiClient(ApiextensionsV1Api);
  const crd = await api.readCustomResourceDefinition({ name: 'runs.kruntimes.io' });
  const spec: V1JSONSchemaProps | undefined = crd.spec.versions[0]?.schema?.openAPIV3Schema?.properties?.spec;
  const rules: V1ValidationRule[] = spec?.x_kubernetes_validations ?? [];
  expect(rules.map((rule) => rule.message)).toContain('spec.runtime is immutable');
  expect(crd.status?.conditions).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'Established', status: 'True' })]));
});

test('createNamespace gives every call its own namespace', async () => {
  const [a, b] = await Promise.all([cluster.createNamespace({ prefix: 'same' }), cluster.createNamespace({ prefix: 'same' })]);
  expect(a.name).not.toBe(b.name);
  await Promise.all([a.delete(), b.delete()]);
  await a.delete(); // idempotent
});
