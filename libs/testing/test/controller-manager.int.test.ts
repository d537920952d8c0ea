// kube-controller-manager runs the built-in controllers: a Deployment becomes a ReplicaSet
// and Pods. There is no scheduler and no node here, so the Pods stay Pending.
import { CoreV1Api, KubernetesObjectApi } from '@kubernetes/client-node';
import { Cluster } from '../src/cluster.ts';
import { waitFor } from '../src/wait.ts';
import type { TestNamespace } from '../src/cluster.ts';

const cluster = Cluster.fromEnvironment();
let namespace: TestNamespace;

beforeEach(async () => {
  // Pods cannot be created before the namespace's default ServiceAccount exists.
  namespace = await cluster.createNamespace({ prefix: 'kcm', waitForDefaultServiceAccount: true });
});
afterEach(async () => {
  await namespace.delete();
});

test('a Deployment becomes Pending Pods owned by its ReplicaSet', async () => {
  await KubernetesObjectApi.makeApiClient(cluster.kubeConfig()).create({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: namespace.name },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'web', image: 'example.invalid/web:1' }] },
      },
    },
  });
  const core = cluster.kubeConfig().makeApiClient(CoreV1Api);
  const pods = await waitFor(
    'two Pods of Deployment web',
    async () => {
      const list = await core.listNamespacedPod({ namespace: namespace.name, labelSelector: 'app=web' });
      return list.items.length === 2 ? list.items : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 200 },
  );
  for (const pod of pods) {
    expect(pod.status?.phase).toBe('Pending');
    expect(pod.spec?.nodeName).toBeUndefined();
    expect(pod.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'ReplicaSet', controller: true })]);
  }
});
