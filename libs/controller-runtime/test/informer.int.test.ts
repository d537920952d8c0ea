import { CustomObjectsApi } from '@kubernetes/client-node';
import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { Run } from '@kruntimes/api';
import { Cluster } from '@kruntimes/testing';
import { Controller, SharedInformer, objectKey } from '../src/index.ts';
import type { ControllerLogger } from '../src/index.ts';

const cluster = Cluster.fromEnvironment();
const logger: ControllerLogger = { error: () => undefined, debug: () => undefined };

type RunObject = Run & KubernetesObject;

function run(name: string): RunObject {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name },
    spec: { runtime: 'python', source: { inline: 'print(1)' }, mode: { task: {} } },
  };
}

async function eventually(predicate: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 300; i += 1) {
    if (predicate()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

test('an informer fills its cache and drives a controller through add, update and delete', async () => {
  const namespace = await cluster.createNamespace({ prefix: 'informer' });
  const kubeConfig = cluster.kubeConfig();
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const target = { group: 'kruntimes.io', version: 'v1alpha1', namespace: namespace.name, plural: 'runs' };
  await api.createNamespacedCustomObject({ ...target, body: run('before-start') });

  const informer = new SharedInformer<RunObject>({
    name: 'runs',
    kubeConfig,
    path: `/apis/kruntimes.io/v1alpha1/namespaces/${namespace.name}/runs`,
    list: (chunk) => api.listNamespacedCustomObject({ ...target, ...chunk }) as Promise<KubernetesListObject<RunObject>>,
    logger,
  });
  const seen: string[] = [];
  const controller = new Controller({
    name: 'runs',
    logger,
    reconcile: (key) => {
      seen.push(
        `${key}:${informer.get(key.split('/')[1] ?? '', namespace.name)?.spec.cancelRequested === true ? 'cancel' : informer.get(key.split('/')[1] ?? '', namespace.name) === undefined ? 'gone' : 'present'}`,
      );
      return Promise.resolve(undefined);
    },
  });
  informer.enqueueTo((key) => {
    controller.enqueue(key);
  });
  controller.start();
  try {
    await informer.start();
    expect(informer.hasSynced).toBe(true);
    expect(informer.list(namespace.name).map(objectKey)).toEqual([`${namespace.name}/before-start`]);

    await api.createNamespacedCustomObject({ ...target, body: run('later') });
    await eventually(() => seen.includes(`${namespace.name}/later:present`), 'add');
    await api.patchNamespacedCustomObject({ ...target, name: 'later', body: [{ op: 'add', path: '/spec/cancelRequested', value: true }] });
    await eventually(() => seen.includes(`${namespace.name}/later:cancel`), 'update');
    await api.deleteNamespacedCustomObject({ ...target, name: 'later' });
    await eventually(() => seen.includes(`${namespace.name}/later:gone`), 'delete');
  } finally {
    await controller.stop();
    await informer.stop();
    await namespace.delete();
  }
});
