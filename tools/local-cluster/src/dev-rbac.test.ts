import { SERVICE_RULES, splitRules } from './dev-rbac.ts';

test('a leader-elected service gets its leader-Lease rule in the system namespace only, like the chart', () => {
  const { cluster, namespaced } = splitRules('scheduler', SERVICE_RULES.scheduler);
  expect(namespaced).toEqual([{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] }]);
  expect(cluster.some((rule) => rule.resources.includes('leases'))).toBe(false);
  expect([...cluster, ...namespaced]).toHaveLength(SERVICE_RULES.scheduler.length);
});

test('stale-recovery reads Pod Leases everywhere but writes only its own Lease, in the system namespace', () => {
  const { cluster, namespaced } = splitRules('stale-recovery', SERVICE_RULES['stale-recovery']);
  expect(cluster).toContainEqual({ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'watch'] });
  expect(namespaced.flatMap((rule) => rule.verbs).sort()).toEqual(['create', 'update']);
});

test('the gateway has no namespaced rules (no leader election)', () => {
  expect(splitRules('runtime-gateway', SERVICE_RULES['runtime-gateway'])).toEqual({
    cluster: SERVICE_RULES['runtime-gateway'],
    namespaced: [],
  });
});
