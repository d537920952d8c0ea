import { CoreV1Api } from '@kubernetes/client-node';
import { Cluster } from '../src/index.ts';

const cluster = Cluster.fromEnvironment();

test('the admin can list namespaces', async () => {
  const core = cluster.kubeConfig().makeApiClient(CoreV1Api);
  const list = await core.listNamespace();
  expect(list.items.map((n) => n.metadata?.name)).toContain('kube-system');
});
