import type { PolicyRule } from '@kruntimes/api';

/**
 * What the gateway reads through the API in `--resolve endpoints` mode, and nothing
 * else: the Runtimes' Services and Pods (list and watch, for its cache). In `dns` mode it
 * needs no API access at all. It never reads Runs or Secrets and never writes.
 */
export const GATEWAY_RBAC_RULES: readonly PolicyRule[] = [{ apiGroups: [''], resources: ['services', 'pods'], verbs: ['list', 'watch'] }];

/**
 * What the gateway reads in `--resolve endpointslices` mode (the chart's default): the
 * Runtimes' EndpointSlices (list and watch, for its cache), nothing else.
 */
export const GATEWAY_ENDPOINTSLICE_RBAC_RULES: readonly PolicyRule[] = [
  { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
];
