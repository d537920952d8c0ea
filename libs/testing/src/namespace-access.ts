// Access to the control plane inside one test namespace: least-privilege ServiceAccounts and the Roles a test grants.
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, RUN_PLURAL } from '@kruntimes/api';
import { TEST_NAMESPACE_LABEL } from './cluster.ts';
import type { Cluster } from './cluster.ts';
import { kubeConfigFor } from './kubeconfig.ts';

export interface Rule {
  apiGroups: readonly string[];
  resources: readonly string[];
  verbs: readonly string[];
  resourceNames?: readonly string[];
}

type Subject = { kind: 'ServiceAccount'; name: string; namespace: string } | { kind: 'User'; name: string; apiGroup: string };

/**
 * Every ServiceAccount token issued through this module, by any system of this test
 * process: none may ever appear in a log.
 */
const issuedTokens: string[] = [];

export function issuedServiceAccountTokens(): readonly string[] {
  return issuedTokens;
}

export class NamespaceAccess {
  readonly #cluster: Cluster;
  readonly #namespace: string;
  readonly #core: CoreV1Api;
  readonly #rbac: RbacAuthorizationV1Api;

  constructor(cluster: Cluster, namespace: string) {
    this.#cluster = cluster;
    this.#namespace = namespace;
    const admin = cluster.kubeConfig();
    this.#core = admin.makeApiClient(CoreV1Api);
    this.#rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  }

  /**
   * A Role `name` with exactly `rules`, bound to `subject`. Rules on cluster-scoped
   * resources (namespaces, SubjectAccessReviews), which a Role cannot grant, go into a
   * ClusterRole `<namespace>:<name>` instead, removed with the test namespace; with
   * `onlyThisNamespace` they stay in the Role, as a RoleBinding grants them (`get` on
   * this very Namespace, nothing else), which is how the chart grants runtimed's rules.
   */
  async grant(name: string, rules: readonly Rule[], subject: Subject, { onlyThisNamespace = false } = {}): Promise<void> {
    const namespace = this.#namespace;
    const clusterRules = onlyThisNamespace ? [] : rules.filter(isClusterScoped);
    const namespacedRules = onlyThisNamespace ? rules : rules.filter((rule) => !isClusterScoped(rule));
    await this.#rbac.createNamespacedRole({ namespace, body: { metadata: { name }, rules: namespacedRules.map(mutableRule) } });
    await this.#rbac.createNamespacedRoleBinding({
      namespace,
      body: { metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name }, subjects: [subject] },
    });
    if (clusterRules.length === 0) return;
    const clusterName = `${namespace}:${name}`;
    const metadata = { name: clusterName, labels: { [TEST_NAMESPACE_LABEL]: namespace } };
    await this.#rbac.createClusterRole({ body: { metadata, rules: clusterRules.map(mutableRule) } });
    await this.#rbac.createClusterRoleBinding({
      body: { metadata, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterName }, subjects: [subject] },
    });
  }

  /** runtimed runs as the namespace's `default` ServiceAccount (the workload's serviceAccountName). */
  async grantServiceAccount(
    serviceAccount: string,
    roleName: string,
    rules: readonly Rule[],
    options: { onlyThisNamespace?: boolean } = {},
  ): Promise<void> {
    await this.grant(roleName, rules, { kind: 'ServiceAccount', name: serviceAccount, namespace: this.#namespace }, options);
  }

  /** A Role `name` with exactly `rules`, bound to the user `user` (one of the cluster's token users). */
  async grantUser(user: string, roleName: string, rules: readonly Rule[]): Promise<void> {
    await this.grant(roleName, rules, { kind: 'User', name: user, apiGroup: 'rbac.authorization.k8s.io' });
  }

  /** Lets `user` get Runs in this namespace (all, or only `runName`): what invoking needs. */
  async grantGetRuns(user: string, runName?: string): Promise<void> {
    const rule: Rule = {
      apiGroups: [API_GROUP],
      resources: [RUN_PLURAL],
      verbs: ['get'],
      ...(runName === undefined ? {} : { resourceNames: [runName] }),
    };
    await this.grantUser(user, `get-runs-${user}-${runName ?? 'all'}`, [rule]);
  }

  /** A new ServiceAccount `name` with exactly `rules`, as a token (valid for an hour). */
  async serviceAccountToken(name: string, rules: readonly Rule[]): Promise<string> {
    const namespace = this.#namespace;
    await this.#core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
    await this.grantServiceAccount(name, name, rules);
    return this.existingServiceAccountToken(name);
  }

  /** A fresh token of a ServiceAccount made before (a component started again keeps its identity). */
  async existingServiceAccountToken(name: string): Promise<string> {
    const created = await this.#core.createNamespacedServiceAccountToken({
      namespace: this.#namespace,
      name,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    const token = created.status?.token ?? '';
    issuedTokens.push(token);
    return token;
  }

  /** A ServiceAccount made before, as a client configuration with a fresh token. */
  async existingServiceAccountKubeConfig(name: string): Promise<KubeConfig> {
    const token = await this.existingServiceAccountToken(name);
    const { server, caPem } = this.#cluster.info;
    return kubeConfigFor({ server, caPem, user: `${this.#namespace}-${name}`, token });
  }

  /** The same ServiceAccount as a client configuration of the control plane. */
  async serviceAccountKubeConfig(name: string, rules: readonly Rule[]): Promise<KubeConfig> {
    const token = await this.serviceAccountToken(name, rules);
    const { server, caPem } = this.#cluster.info;
    return kubeConfigFor({ server, caPem, user: `${this.#namespace}-${name}`, token });
  }
}

/** Resources without a namespace that components' rule tables name. */
const CLUSTER_SCOPED = new Set(['/namespaces', 'authorization.k8s.io/subjectaccessreviews']);

function isClusterScoped(rule: Rule): boolean {
  return rule.apiGroups.some((group) => rule.resources.some((resource) => CLUSTER_SCOPED.has(`${group}/${resource}`)));
}

/** client-node's V1PolicyRule has mutable arrays; the rule tables of the libs are readonly. */
function mutableRule(rule: Rule): { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] } {
  return {
    apiGroups: [...rule.apiGroups],
    resources: [...rule.resources],
    verbs: [...rule.verbs],
    ...(rule.resourceNames === undefined ? {} : { resourceNames: [...rule.resourceNames] }),
  };
}
