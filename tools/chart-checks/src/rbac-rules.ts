import { CONTROLLER_MANAGER_RULES } from '@kruntimes/controller-manager-core';
import { GATEWAY_ENDPOINTSLICE_RBAC_RULES, GATEWAY_RBAC_RULES } from '@kruntimes/gateway-core';
import { RUNTIMED_ROLE_RULES } from '@kruntimes/runtimed-core';
import { SCHEDULER_RULES } from '@kruntimes/scheduler-core';
import { STALE_RECOVERY_RULES } from '@kruntimes/stale-recovery-core';
import { RUNTIME_USER_RULES } from '@kruntimes/api';

export interface PolicyRule {
  apiGroups: readonly string[];
  resources: readonly string[];
  verbs: readonly string[];
  resourceNames?: readonly string[];
}

/** Where the generated rule sets live in the chart (named templates shared by the subcharts). */
export const RBAC_RULES_TEMPLATE = 'deploy/charts/kruntimes/templates/_rbac-rules.tpl';

/**
 * The rule constants of each service, by the chart's name for it (the gateway's: `gateway`
 * in `endpoints` resolve mode, `gatewayEndpointSlices` in `endpointslices` mode; in `dns`
 * mode it has no API access at all).
 */
export function serviceRules(): Record<RuleSetName, readonly PolicyRule[]> {
  return {
    scheduler: SCHEDULER_RULES,
    controllerManager: CONTROLLER_MANAGER_RULES,
    staleRecovery: STALE_RECOVERY_RULES,
    gateway: GATEWAY_RBAC_RULES,
    gatewayEndpointSlices: GATEWAY_ENDPOINTSLICE_RBAC_RULES,
    runtimed: RUNTIMED_ROLE_RULES,
    runtimeUser: RUNTIME_USER_RULES,
  };
}

export const RULE_SETS = [
  'scheduler',
  'controllerManager',
  'staleRecovery',
  'gateway',
  'gatewayEndpointSlices',
  'runtimed',
  'runtimeUser',
] as const;
export type RuleSetName = (typeof RULE_SETS)[number];

/** The leader Lease of a leader-elected service lives in the release namespace only. */
const LEADER_ELECTED: ReadonlySet<RuleSetName> = new Set(['scheduler', 'controllerManager', 'staleRecovery']);
const LEADER_LEASE_VERBS = new Set(['get', 'create', 'update']);

function isLeaderLeaseRule(rule: PolicyRule): boolean {
  return (
    rule.apiGroups.length === 1 &&
    rule.apiGroups[0] === 'coordination.k8s.io' &&
    rule.resources.length === 1 &&
    rule.resources[0] === 'leases' &&
    rule.verbs.every((verb) => LEADER_LEASE_VERBS.has(verb))
  );
}

/** Resources that have no namespace, which a Role (global.watchNamespace) could not grant. */
const CLUSTER_SCOPED_RESOURCES = new Set(['/namespaces', 'authorization.k8s.io/subjectaccessreviews']);

function isClusterScopedRule(rule: PolicyRule): boolean {
  return rule.apiGroups.some((group) => rule.resources.some((resource) => CLUSTER_SCOPED_RESOURCES.has(`${group}/${resource}`)));
}

export interface SplitRules {
  /** The ClusterRole `<name>`, or with global.watchNamespace a Role in that namespace. */
  cluster: PolicyRule[];
  /** The Role `<name>-leader-election` in the release namespace. */
  namespaced: PolicyRule[];
  /** The ClusterRole `<name>-cluster-scoped`, whatever global.watchNamespace says: resources without a namespace. */
  clusterScoped: PolicyRule[];
}

/**
 * Splits a service's rules: a leader-elected service's Lease rule (get/create/update on
 * leases, nothing more) goes into a Role in the release namespace; rules on cluster-scoped
 * resources (namespaces, SubjectAccessReviews) into a ClusterRole of their own; the rest
 * into its ClusterRole. runtimed's rules are one ClusterRole that RoleBindings grant per
 * Runtime namespace, so they are all "cluster" here.
 */
export function splitRules(name: RuleSetName, rules: readonly PolicyRule[]): SplitRules {
  const split: SplitRules = { cluster: [], namespaced: [], clusterScoped: [] };
  for (const rule of rules) {
    if (name === 'runtimed' || name === 'runtimeUser') split.cluster.push(rule);
    else if (LEADER_ELECTED.has(name) && isLeaderLeaseRule(rule)) split.namespaced.push(rule);
    else if (isClusterScopedRule(rule)) split.clusterScoped.push(rule);
    else split.cluster.push(rule);
  }
  return split;
}

function ruleYaml(rule: PolicyRule): string {
  const lines = [`- apiGroups: ${JSON.stringify(rule.apiGroups)}`, `  resources: ${JSON.stringify(rule.resources)}`];
  if (rule.resourceNames !== undefined) lines.push(`  resourceNames: ${JSON.stringify(rule.resourceNames)}`);
  lines.push(`  verbs: ${JSON.stringify(rule.verbs)}`);
  return lines.join('\n');
}

const CONSTANT_NAMES: Record<RuleSetName, string> = {
  scheduler: 'SCHEDULER_RULES (libs/scheduler-core)',
  controllerManager: 'CONTROLLER_MANAGER_RULES (libs/controller-manager-core)',
  staleRecovery: 'STALE_RECOVERY_RULES (libs/stale-recovery-core)',
  gateway: 'GATEWAY_RBAC_RULES (libs/gateway-core), used only with resolveMode endpoints',
  gatewayEndpointSlices: 'GATEWAY_ENDPOINTSLICE_RBAC_RULES (libs/gateway-core), used only with resolveMode endpointslices',
  runtimed: 'RUNTIMED_ROLE_RULES (libs/runtimed-core)',
  runtimeUser: 'RUNTIME_USER_RULES (libs/api), the ClusterRole kruntimes-runtime-user',
};

/** The content of RBAC_RULES_TEMPLATE: two named templates per service, `.cluster` and `.namespaced`. */
export function renderRbacRulesTemplate(rules: Record<RuleSetName, readonly PolicyRule[]> = serviceRules()): string {
  const out = [
    '{{- /*',
    'GENERATED by `npx nx run chart-checks:generate` from the RBAC rule constants in code; do not edit.',
    'A test fails when this file is stale. Each service has `<name>.cluster` (its ClusterRole),',
    '`<name>.namespaced` (a Role in the release namespace: the leader Lease) and `<name>.clusterScoped`',
    '(a ClusterRole even with global.watchNamespace: resources without a namespace).',
    '*/ -}}',
  ];
  for (const name of RULE_SETS) {
    const { cluster, namespaced, clusterScoped } = splitRules(name, rules[name]);
    out.push('', `{{- /* ${CONSTANT_NAMES[name]} */ -}}`);
    for (const [scope, list] of [
      ['cluster', cluster],
      ['namespaced', namespaced],
      ['clusterScoped', clusterScoped],
    ] as const) {
      out.push(`{{- define "kruntimes.rules.${name}.${scope}" -}}`);
      if (list.length > 0) out.push(list.map(ruleYaml).join('\n'));
      out.push('{{- end }}');
    }
  }
  return `${out.join('\n')}\n`;
}
