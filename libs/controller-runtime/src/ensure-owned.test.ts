import { planOwned, specHashed } from './ensure-owned.ts';
import type { DesiredObject, OwnedPlan } from './ensure-owned.ts';

const HASH = 'example.com/spec-hash';
const owner = { kind: 'Runtime', uid: 'uid-ours' };
/** A ConfigMap as plain data (client-node's models are classes, which lint forbids spreading). */
interface ConfigMap {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    annotations?: Record<string, string>;
    ownerReferences?: OwnerReference[];
    resourceVersion?: string;
  };
  immutable?: boolean;
  data?: Record<string, string>;
}
interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller: boolean;
}

const controller = (uid: string, isController = true): OwnerReference => ({
  apiVersion: 'kruntimes.io/v1alpha1',
  kind: 'Runtime',
  name: 'r',
  uid,
  controller: isController,
});

function configMap(options: { hash?: string; owners?: OwnerReference[]; resourceVersion?: string; immutable?: boolean } = {}): ConfigMap {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'cm',
      namespace: 'ns',
      ...(options.hash === undefined ? {} : { annotations: { [HASH]: options.hash } }),
      ...(options.owners === undefined ? {} : { ownerReferences: options.owners }),
      ...(options.resourceVersion === undefined ? {} : { resourceVersion: options.resourceVersion }),
    },
    ...(options.immutable === undefined ? {} : { immutable: options.immutable }),
  };
}

const desired = specHashed<ConfigMap>(
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'ns', annotations: { [HASH]: 'h2' } } },
  HASH,
);
const immutable: DesiredObject<ConfigMap> = {
  ...desired,
  immutable: (current) => (current.immutable === true ? 'immutable' : undefined),
};
const refused = (message: string): OwnedPlan => ({ action: 'refuse', reason: 'NotControlled', message });
const notOurs = refused('ConfigMap ns/cm exists and is not controlled by this Runtime; rename the Runtime or remove the ConfigMap');

describe('planOwned', () => {
  const cases: [string, ConfigMap | undefined, DesiredObject<ConfigMap>, OwnedPlan][] = [
    ['none cached: create', undefined, desired, { action: 'create' }],
    ['no owner references: refused, never adopted', configMap({ hash: 'h2' }), desired, notOurs],
    ['another controller: refused', configMap({ hash: 'h2', owners: [controller('uid-other')] }), desired, notOurs],
    [
      'ours only as a non-controller reference: refused',
      configMap({ hash: 'h2', owners: [controller('uid-ours', false)] }),
      desired,
      notOurs,
    ],
    ['ours, same hash: kept', configMap({ hash: 'h2', owners: [controller('uid-ours')] }), desired, { action: 'keep' }],
    [
      'ours, another hash: replaced on its resourceVersion',
      configMap({ hash: 'h1', owners: [controller('uid-ours')], resourceVersion: '42' }),
      desired,
      { action: 'replace', resourceVersion: '42' },
    ],
    [
      'ours, no hash yet: replaced',
      configMap({ owners: [controller('uid-other'), controller('uid-ours')], resourceVersion: '7' }),
      desired,
      { action: 'replace', resourceVersion: '7' },
    ],
    [
      'ours, to be replaced, but immutable: refused with the reason',
      configMap({ hash: 'h1', owners: [controller('uid-ours')], immutable: true }),
      immutable,
      { action: 'refuse', reason: 'Immutable', message: 'immutable' },
    ],
    [
      'ours, immutable but up to date: kept',
      configMap({ hash: 'h2', owners: [controller('uid-ours')], immutable: true }),
      immutable,
      { action: 'keep' },
    ],
  ];
  it.each(cases)('%s', (_name, current, want, plan) => {
    expect(planOwned(current, owner, want)).toEqual(plan);
  });
});

describe('specHashed', () => {
  it('builds the desired object to create, and merges it with the current one to replace', async () => {
    const object: ConfigMap = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cm', namespace: 'ns' },
      data: { a: '1' },
    };
    const merged = specHashed(object, HASH, (want, current) => ({ ...want, data: { ...current.data, ...want.data } }));
    expect(await merged.build(undefined)).toBe(object);
    expect(await merged.build({ ...object, data: { kept: 'yes', a: '0' } })).toEqual({ ...object, data: { kept: 'yes', a: '1' } });
    expect(merged).toMatchObject({ apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'cm' });
  });
});
