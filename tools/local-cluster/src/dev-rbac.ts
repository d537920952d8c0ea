import { ApiException, CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { CONTROLLER_MANAGER_RULES } from '@kruntimes/controller-manager-core';
import { GATEWAY_RBAC_RULES } from '@kruntimes/gateway-core';
import { RUNTIMED_ROLE_RULES } from '@kruntimes/runtimed-core';
import { SCHEDULER_RULES } from '@kruntimes/scheduler-core';
import { STALE_RECOVERY_RULES } from '@kruntimes/stale-recovery-core';

export interface PolicyRule {
  apiGroups: readonly string[];
  resources: readonly string[];
  verbs: readonly string[];
  resourceNames?: readonly string[];
}

/** Where the services' ServiceAccounts and leader Leases live (the chart's release namespace). */
export const SYSTEM_NAMESPACE = 'kruntimes-system';
/** The ServiceAccount of Runtime Pods (controller-manager --runtime-service-account). */
export const RUNTIMED_SERVICE_ACCOUNT = 'kruntimes-runtimed';

/** The local cluster's Prometheus: discovers Runtime Pods, so it may read Pods, nothing else. */
export const PROMETHEUS_SERVICE_ACCOUNT = 'prometheus';
const PROMETHEUS_RULES: readonly PolicyRule[] = [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }];

export const SERVICES = ['scheduler', 'controller-manager', 'stale-recovery', 'runtime-gateway'] as const;
export type ServiceName = (typeof SERVICES)[number];

/** Each service's rules: the constants in code, as the Helm chart renders them. */
export const SERVICE_RULES: Readonly<Record<ServiceName, readonly PolicyRule[]>> = {
  scheduler: SCHEDULER_RULES,
  'controller-manager': CONTROLLER_MANAGER_RULES,
  'stale-recovery': STALE_RECOVERY_RULES,
  'runtime-gateway': GATEWAY_RBAC_RULES,
};
const LEADER_ELECTED: ReadonlySet<ServiceName> = new Set(['scheduler', 'controller-manager', 'stale-recovery']);
const LEADER_LEASE_VERBS = new Set(['get', 'create', 'update']);

/**
 * As the chart splits them: a leader-elected service's leader-Lease rule (only
 * get/create/update on leases) becomes a Role in the system namespace, the rest its
 * ClusterRole, so no service can write Leases (e.g. runtimed's Pod Leases) elsewhere.
 */
export function splitRules(service: ServiceName, rules: readonly PolicyRule[]): { cluster: PolicyRule[]; namespaced: PolicyRule[] } {
  const cluster: PolicyRule[] = [];
  const namespaced: PolicyRule[] = [];
  for (const rule of rules) {
    const leaderLease =
      LEADER_ELECTED.has(service) &&
      rule.apiGroups.length === 1 &&
      rule.apiGroups[0] === 'coordination.k8s.io' &&
      rule.resources.length === 1 &&
      rule.resources[0] === 'leases' &&
      rule.verbs.every((verb) => LEADER_LEASE_VERBS.has(verb));
    (leaderLease ? namespaced : cluster).push(rule);
  }
  return { cluster, namespaced };
}

const mutable = (rules: readonly PolicyRule[]): { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }[] =>
  rules.map((rule) => ({
    apiGroups: [...rule.apiGroups],
    resources: [...rule.resources],
    verbs: [...rule.verbs],
    ...(rule.resourceNames === undefined ? {} : { resourceNames: [...rule.resourceNames] }),
  }));

/** Creates, tolerating "already exists" (a half-finished earlier start of the same cluster). */
async function ensure(create: () => Promise<unknown>): Promise<void> {
  try {
    await create();
  } catch (error) {
    if (!(error instanceof ApiException && error.code === 409)) throw error;
  }
}

const ROLE_REF = (kind: 'ClusterRole' | 'Role', name: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind, name });

/**
 * The system namespace, a ServiceAccount per service bound to exactly its rules, and the
 * ClusterRole `kruntimes-runtimed` (RUNTIMED_ROLE_RULES) that Runtime namespaces bind.
 */
export async function installServiceRbac(admin: KubeConfig): Promise<void> {
  const core = admin.makeApiClient(CoreV1Api);
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await ensure(() => core.createNamespace({ body: { metadata: { name: SYSTEM_NAMESPACE } } }));
  for (const service of SERVICES) {
    const name = `kruntimes-${service}`;
    const subjects = [{ kind: 'ServiceAccount', name: service, namespace: SYSTEM_NAMESPACE }];
    const { cluster, namespaced } = splitRules(service, SERVICE_RULES[service]);
    await ensure(() => core.createNamespacedServiceAccount({ namespace: SYSTEM_NAMESPACE, body: { metadata: { name: service } } }));
    await ensure(() => rbac.createClusterRole({ body: { metadata: { name }, rules: mutable(cluster) } }));
    await ensure(() => rbac.createClusterRoleBinding({ body: { metadata: { name }, roleRef: ROLE_REF('ClusterRole', name), subjects } }));
    if (namespaced.length > 0) {
      const roleName = `${service}-leader-election`;
      await ensure(() =>
        rbac.createNamespacedRole({ namespace: SYSTEM_NAMESPACE, body: { metadata: { name: roleName }, rules: mutable(namespaced) } }),
      );
      await ensure(() =>
        rbac.createNamespacedRoleBinding({
          namespace: SYSTEM_NAMESPACE,
          body: { metadata: { name: roleName }, roleRef: ROLE_REF('Role', roleName), subjects },
        }),
      );
    }
  }
  await ensure(() => rbac.createClusterRole({ body: { metadata: { name: 'kruntimes-runtimed' }, rules: mutable(RUNTIMED_ROLE_RULES) } }));
  const prometheus = `kruntimes-dev-${PROMETHEUS_SERVICE_ACCOUNT}`;
  const subjects = [{ kind: 'ServiceAccount', name: PROMETHEUS_SERVICE_ACCOUNT, namespace: SYSTEM_NAMESPACE }];
  await ensure(() =>
    core.createNamespacedServiceAccount({ namespace: SYSTEM_NAMESPACE, body: { metadata: { name: PROMETHEUS_SERVICE_ACCOUNT } } }),
  );
  await ensure(() => rbac.createClusterRole({ body: { metadata: { name: prometheus }, rules: mutable(PROMETHEUS_RULES) } }));
  await ensure(() =>
    rbac.createClusterRoleBinding({ body: { metadata: { name: prometheus }, roleRef: ROLE_REF('ClusterRole', prometheus), subjects } }),
  );
}

/** What a namespace needs to run Runtimes: runtimed's ServiceAccount, bound to `kruntimes-runtimed` there. */
export async function prepareRuntimeNamespace(admin: KubeConfig, namespace: string): Promise<void> {
  const core = admin.makeApiClient(CoreV1Api);
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await ensure(() => core.createNamespace({ body: { metadata: { name: namespace } } }));
  await ensure(() => core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: RUNTIMED_SERVICE_ACCOUNT } } }));
  await ensure(() =>
    rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'kruntimes-runtimed' },
        roleRef: ROLE_REF('ClusterRole', 'kruntimes-runtimed'),
        subjects: [{ kind: 'ServiceAccount', name: RUNTIMED_SERVICE_ACCOUNT, namespace }],
      },
    }),
  );
}

/** A ServiceAccount in `namespace` whose only right is `rules` there (a Role), e.g. the demo's invoker. */
export async function namespacedServiceAccount(
  admin: KubeConfig,
  namespace: string,
  name: string,
  rules: readonly PolicyRule[],
): Promise<void> {
  const core = admin.makeApiClient(CoreV1Api);
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await ensure(() => core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } }));
  await ensure(() => rbac.createNamespacedRole({ namespace, body: { metadata: { name }, rules: mutable(rules) } }));
  await ensure(() =>
    rbac.createNamespacedRoleBinding({
      namespace,
      body: { metadata: { name }, roleRef: ROLE_REF('Role', name), subjects: [{ kind: 'ServiceAccount', name, namespace }] },
    }),
  );
}

/** A bound token of a ServiceAccount (TokenRequest; a day: the local cluster is for a working session). */
export async function serviceAccountToken(admin: KubeConfig, namespace: string, name: string, expirationSeconds = 86_400): Promise<string> {
  const core = admin.makeApiClient(CoreV1Api);
  const token = (await core.createNamespacedServiceAccountToken({ namespace, name, body: { spec: { audiences: [], expirationSeconds } } }))
    .status?.token;
  if (token === undefined || token === '') throw new Error(`no token for ServiceAccount ${namespace}/${name}`);
  return token;
}
