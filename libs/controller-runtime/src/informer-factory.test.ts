import { watchPath, watchSpecKey } from './informer-factory.ts';
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
