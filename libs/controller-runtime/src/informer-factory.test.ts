import { KubeConfig } from '@kubernetes/client-node';
import { InformerFactory, watchPath, watchSpecKey } from './informer-factory.ts';
import type { WatchSpec } from './informer-factory.ts';

describe('watchPath', () => {
  const cases: [string, WatchSpec, string][] = [
    ['core, all namespaces', { group: '', version: 'v1', plural: 'pods' }, '/api/v1/pods'],
    ['core, one namespace', { group: '', version: 'v1', plural: 'pods', namespace: 'demo' }, '/api/v1/namespaces/demo/pods'],
    ['group, all namespaces', { group: 'kruntimes.io', version: 'v1alpha1', plural: 'runs' }, '/apis/kruntimes.io/v1alpha1/runs'],
    [
      'group, one namespace',
      { group: 'apps', version: 'v1', plural: 'deployments', namespace: 'demo' },
      '/apis/apps/v1/namespaces/demo/deployments',
    ],
    [
      'field selector as a query (the informer has no option for it)',
      { group: '', version: 'v1', plural: 'events', fieldSelector: 'reason=OwnerUnreachable' },
      '/api/v1/events?fieldSelector=reason%3DOwnerUnreachable',
    ],
    [
      'label selector is not part of the path (the informer passes it)',
      { group: '', version: 'v1', plural: 'pods', labelSelector: 'a=b' },
      '/api/v1/pods',
    ],
  ];
  it.each(cases)('%s', (_name, spec, path) => {
    expect(watchPath(spec)).toBe(path);
  });
});

describe('watchSpecKey', () => {
  const base: WatchSpec = { group: '', version: 'v1', plural: 'pods', namespace: 'demo', labelSelector: 'a=b' };
  it('ignores the log name', () => {
    expect(watchSpecKey({ ...base, name: 'x' })).toBe(watchSpecKey({ ...base, name: 'y' }));
  });
  it.each<[string, Partial<WatchSpec>]>([
    ['group', { group: 'apps' }],
    ['version', { version: 'v2' }],
    ['plural', { plural: 'services' }],
    ['namespace', { namespace: 'other' }],
    ['all namespaces', { namespace: undefined }],
    ['label selector', { labelSelector: 'a=c' }],
    ['field selector', { fieldSelector: 'x=y' }],
  ])('differs by %s', (_name, change) => {
    expect(watchSpecKey({ ...base, ...change })).not.toBe(watchSpecKey(base));
  });
});

describe('the typed accessors', () => {
  // A cluster nothing listens on: no informer here is started.
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromClusterAndUser({ name: 'none', server: 'https://127.0.0.1:1', skipTLSVerify: true }, { name: 'none' });
  const factory = new InformerFactory({ kubeConfig, logger: { error: () => undefined, debug: () => undefined } });
  // Each accessor is the informer of exactly one resource: the untyped informer() of that resource is the same instance.
  const cases: [string, () => { name: string }, Omit<WatchSpec, 'namespace'>][] = [
    ['runs', () => factory.runs({ namespace: 'ns' }), { group: 'kruntimes.io', version: 'v1alpha1', plural: 'runs' }],
    ['runtimes', () => factory.runtimes({ namespace: 'ns' }), { group: 'kruntimes.io', version: 'v1alpha1', plural: 'runtimes' }],
    ['runInputs', () => factory.runInputs({ namespace: 'ns' }), { group: 'kruntimes.io', version: 'v1alpha1', plural: 'runinputs' }],
    [
      'runSchedules',
      () => factory.runSchedules({ namespace: 'ns' }),
      { group: 'kruntimes.io', version: 'v1alpha1', plural: 'runschedules' },
    ],
    [
      'artifactStores',
      () => factory.artifactStores({ namespace: 'ns' }),
      { group: 'kruntimes.io', version: 'v1alpha1', plural: 'artifactstores' },
    ],
    ['pods', () => factory.pods({ namespace: 'ns' }), { group: '', version: 'v1', plural: 'pods' }],
    ['services', () => factory.services({ namespace: 'ns' }), { group: '', version: 'v1', plural: 'services' }],
    ['secrets', () => factory.secrets({ namespace: 'ns' }), { group: '', version: 'v1', plural: 'secrets' }],
    ['events', () => factory.events({ namespace: 'ns' }), { group: '', version: 'v1', plural: 'events' }],
    ['deployments', () => factory.deployments({ namespace: 'ns' }), { group: 'apps', version: 'v1', plural: 'deployments' }],
    ['replicaSets', () => factory.replicaSets({ namespace: 'ns' }), { group: 'apps', version: 'v1', plural: 'replicasets' }],
    [
      'podDisruptionBudgets',
      () => factory.podDisruptionBudgets({ namespace: 'ns' }),
      { group: 'policy', version: 'v1', plural: 'poddisruptionbudgets' },
    ],
    ['leases', () => factory.leases({ namespace: 'ns' }), { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' }],
  ];
  it.each(cases)('%s', (_name, accessor, resource) => {
    const informer = accessor();
    expect(factory.informer({ ...resource, namespace: 'ns', name: 'other log name' })).toBe(informer);
    expect(informer.name).toBe(resource.plural);
  });

  it('namespaces: cluster-scoped (no namespace in the watch), one informer per field selector', () => {
    const all = factory.namespaces();
    expect(factory.informer({ group: '', version: 'v1', plural: 'namespaces' })).toBe(all);
    expect(factory.namespaces({ fieldSelector: 'metadata.name=a' })).not.toBe(all);
  });
});
