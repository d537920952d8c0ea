import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RBAC_RULES_TEMPLATE, renderRbacRulesTemplate, splitRules } from './rbac-rules.ts';
import { WORKSPACE_ROOT } from './workspace.ts';

describe('the chart RBAC rules', () => {
  it(`${RBAC_RULES_TEMPLATE} is fresh (run \`npx nx run chart-checks:generate\`)`, () => {
    expect(readFileSync(join(WORKSPACE_ROOT, RBAC_RULES_TEMPLATE), 'utf8')).toBe(renderRbacRulesTemplate());
  });

  it.each([
    ['get, create, update', ['get', 'create', 'update'], 'namespaced'],
    ['create alone', ['create'], 'namespaced'],
    ['update of one name', ['update'], 'namespaced'],
    ['list and watch (Pod Leases of every namespace)', ['get', 'list', 'watch'], 'cluster'],
  ] as const)('a leader-elected service keeps leases %s in the scope it belongs to', (_what, verbs, scope) => {
    const rule = { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs };
    const split = splitRules('scheduler', [rule]);
    expect(split[scope]).toEqual([rule]);
  });

  it("runtimed's rules are all in its ClusterRole (RoleBindings grant it per Runtime namespace)", () => {
    const rule = { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] };
    expect(splitRules('runtimed', [rule])).toEqual({ cluster: [rule], namespaced: [], clusterScoped: [] });
  });

  it.each([
    ['namespaces', { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] }],
    ['SubjectAccessReviews', { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] }],
  ])('rules on %s (no namespace) go into the cluster-scoped ClusterRole', (_what, rule) => {
    expect(splitRules('scheduler', [rule])).toEqual({ cluster: [], namespaced: [], clusterScoped: [rule] });
  });
});
