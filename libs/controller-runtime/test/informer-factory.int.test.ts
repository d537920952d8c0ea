import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { KubernetesObject, V1Pod } from '@kubernetes/client-node';
import { RUN_RUNTIME_FIELD } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { Cluster, waitFor } from '@kruntimes/testing';
import { InformerFactory } from '../src/index.ts';
import type { ControllerLogger } from '../src/index.ts';

const cluster = Cluster.fromEnvironment();
const logger: ControllerLogger = { error: () => undefined, debug: () => undefined };

type RunObject = Run & KubernetesObject;

/** A task Run of `runtime`, created as a user would (this lib sits below the typed Run client). */
function createTaskRun(custom: CustomObjectsApi, namespace: string, name: string, runtime: string): Promise<unknown> {
  return custom.createNamespacedCustomObject({
    group: 'kruntimes.io',
    version: 'v1alpha1',
    namespace,
    plural: 'runs',
    body: {
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata: { name },
      spec: { runtime, source: { inline: 'print(1)' }, mode: { task: {} } },
    },
  });
}

test('one informer per watch: built-in and custom resources, namespace and selectors filtered on the server', async () => {
  const namespace = await cluster.createNamespace({ prefix: 'informer-factory', waitForDefaultServiceAccount: true });
  const other = await cluster.createNamespace({ prefix: 'informer-factory-other', waitForDefaultServiceAccount: true });
  const kubeConfig = cluster.kubeConfig();
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const pod = (name: string, labels: Record<string, string>): V1Pod => ({
    metadata: { name, labels },
    spec: { containers: [{ name: 'c', image: 'none' }] },
  });
  for (const ns of [namespace.name, other.name]) {
    await core.createNamespacedPod({ namespace: ns, body: pod('selected', { role: 'runtime' }) });
    await core.createNamespacedPod({ namespace: ns, body: pod('unselected', { role: 'other' }) });
  }
  await createTaskRun(custom, namespace.name, 'r', 'python');

  const factory = new InformerFactory({ kubeConfig, logger });
  const podSpec = { group: '', version: 'v1', plural: 'pods', namespace: namespace.name, labelSelector: 'role=runtime' };
  const pods = factory.informer<V1Pod>(podSpec);
  expect(factory.informer<V1Pod>({ ...podSpec, name: 'same-watch' })).toBe(pods);
  const allPods = factory.informer<V1Pod>({ group: '', version: 'v1', plural: 'pods', labelSelector: 'role=runtime' });
  const byName = factory.informer<V1Pod>({
    group: '',
    version: 'v1',
    plural: 'pods',
    namespace: namespace.name,
    fieldSelector: 'metadata.name=unselected',
  });
  const runs = factory.informer<RunObject>({ group: 'kruntimes.io', version: 'v1alpha1', plural: 'runs', namespace: namespace.name });
  try {
    await factory.start();
    expect(pods.hasSynced && allPods.hasSynced && byName.hasSynced && runs.hasSynced).toBe(true);
    expect(pods.list().map((p) => p.metadata?.name)).toEqual(['selected']);
    expect(
      allPods
        .list()
        .map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`)
        .sort(),
    ).toEqual([`${namespace.name}/selected`, `${other.name}/selected`].sort());
    expect(byName.list().map((p) => p.metadata?.name)).toEqual(['unselected']);
    expect(runs.list().map((r) => r.metadata.name)).toEqual(['r']);

    // The watch keeps following after the list, with the same server-side filters.
    await core.createNamespacedPod({ namespace: namespace.name, body: pod('later', { role: 'runtime' }) });
    await core.createNamespacedPod({ namespace: namespace.name, body: pod('later-other', { role: 'other' }) });
    await waitFor('the watched Pod in the cache', () => Promise.resolve(pods.get('later', namespace.name)), { timeoutMs: 30_000 });
    expect(pods.get('later-other', namespace.name)).toBeUndefined();
  } finally {
    await factory.stop();
  }
});

test("Runs selected by spec.runtime on the server (the CRD's selectable field): a watcher of one Runtime's Runs gets no event of another's", async () => {
  const namespace = await cluster.createNamespace({ prefix: 'informer-runtime-field' });
  const kubeConfig = cluster.kubeConfig();
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const target = { group: 'kruntimes.io', version: 'v1alpha1', namespace: namespace.name, plural: 'runs' };
  const create = (name: string, runtime: string): Promise<unknown> => createTaskRun(custom, namespace.name, name, runtime);
  await create('mine-0', 'mine');
  for (let k = 0; k < 20; k += 1) await create(`theirs-${String(k)}`, 'theirs');

  const factory = new InformerFactory({ kubeConfig, logger });
  const runs = factory.informer<RunObject>({ ...target, fieldSelector: `${RUN_RUNTIME_FIELD}=mine` });
  const events: string[] = [];
  runs.enqueueTo(
    () => undefined,
    (run) => {
      events.push(run.metadata.name ?? '');
      return undefined;
    },
  );
  try {
    await factory.start();
    expect(runs.list().map((r) => r.metadata.name)).toEqual(['mine-0']);
    for (let k = 20; k < 40; k += 1) await create(`theirs-${String(k)}`, 'theirs');
    // Created after the others: once it is here, any event of theirs would have come first (one watch, in order).
    await create('mine-1', 'mine');
    await waitFor('the later Run of this Runtime in the cache', () => Promise.resolve(runs.get('mine-1', namespace.name)), {
      timeoutMs: 30_000,
    });
    expect(events.filter((name) => !name.startsWith('mine-'))).toEqual([]);
    expect(
      runs
        .list()
        .map((r) => r.metadata.name)
        .sort(),
    ).toEqual(['mine-0', 'mine-1']);
  } finally {
    await factory.stop();
  }
});

test('a core resource without a lister is refused when asked for, not when first listed', () => {
  const factory = new InformerFactory({ kubeConfig: cluster.kubeConfig(), logger });
  expect(() => factory.informer({ group: '', version: 'v1', plural: 'nodes' })).toThrow(/no lister for core resource nodes/);
});

test('a projected, indexed cache: listed a page at a time, each object kept as the projection says, filed by its index as events arrive', async () => {
  const namespace = await cluster.createNamespace({ prefix: 'informer-projection' });
  const kubeConfig = cluster.kubeConfig();
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const target = { group: 'kruntimes.io', version: 'v1alpha1', namespace: namespace.name, plural: 'runs' };
  const create = (name: string, runtime: string): Promise<unknown> => createTaskRun(custom, namespace.name, name, runtime);
  // More than two pages (LIST_PAGE_SIZE 500), created 16 at a time.
  const names = Array.from({ length: 1_100 }, (_, i) => `r-${String(i)}`);
  for (let i = 0; i < names.length; i += 16) {
    await Promise.all(names.slice(i, i + 16).map((name, j) => create(name, (i + j) % 10 === 0 ? 'bash' : 'python')));
  }
  const keep = (run: RunObject): RunObject =>
    ({
      metadata: { name: run.metadata.name, namespace: run.metadata.namespace, resourceVersion: run.metadata.resourceVersion },
      spec: { runtime: run.spec.runtime, cancelRequested: run.spec.cancelRequested, source: { inline: '' }, mode: run.spec.mode },
    }) as RunObject;
  const factory = new InformerFactory({ kubeConfig, logger });
  const spec = { group: 'kruntimes.io', version: 'v1alpha1', plural: 'runs', namespace: namespace.name };
  const runs = factory.informer<RunObject>({ ...spec, projection: { name: 'runtime-only', keep } });
  expect(factory.informer<RunObject>(spec)).not.toBe(runs);
  runs.addIndex('runtime', (run) => [run.spec.runtime]);
  const seenOnUpdate: number[] = [];
  runs.addEventHandler({ update: () => seenOnUpdate.push(runs.countByIndex('runtime', 'bash')) });
  try {
    await runs.start();
    expect(runs.list()).toHaveLength(1_100);
    expect(runs.countByIndex('runtime', 'bash')).toBe(110);
    expect(runs.byIndex('runtime', 'python')).toHaveLength(990);
    expect(runs.byIndex('runtime', 'none')).toEqual([]);
    expect(runs.get('r-1', namespace.name)?.spec.source).toEqual({ inline: '' });
    expect(runs.get('r-1', namespace.name)?.metadata.uid).toBeUndefined();

    // A watch event is projected too, and moves the object between index values before any handler runs.
    await custom.patchNamespacedCustomObject({
      ...target,
      name: 'r-1',
      body: [{ op: 'add', path: '/spec/cancelRequested', value: true }],
    });
    await waitFor(
      'the update in the cache',
      () => Promise.resolve(runs.get('r-1', namespace.name)?.spec.cancelRequested === true || undefined),
      {
        timeoutMs: 30_000,
      },
    );
    expect(runs.get('r-1', namespace.name)?.spec.source).toEqual({ inline: '' });
    expect(seenOnUpdate).toEqual([110]);
    await custom.deleteNamespacedCustomObject({ ...target, name: 'r-0' });
    await waitFor('the delete in the index', () => Promise.resolve(runs.countByIndex('runtime', 'bash') === 109 || undefined), {
      timeoutMs: 30_000,
    });
  } finally {
    await factory.stop();
  }
});
