import { API_GROUP, RUN_PLURAL, RUNTIME_PLURAL } from '@kruntimes/api';
import { SNAPSHOT_CONTROLLER_RULES } from '@kruntimes/snapshot-core';

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/**
 * Everything the scheduler does through the API, and nothing else (a ClusterRole when it
 * watches every namespace, a Role in its namespace otherwise): read Runs, Runtimes and
 * Runtime Pods; write Run status (bind, Unschedulable, cancel before assignment); keep
 * its leader Lease. It never writes a Run's spec or metadata, and never touches Pods. Its
 * snapshot controller brings its own: read source ConfigMaps, create and own snapshot ones.
 */
export const SCHEDULER_RULES: readonly PolicyRule[] = [
  { apiGroups: [API_GROUP], resources: [RUN_PLURAL, RUNTIME_PLURAL], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [API_GROUP], resources: [`${RUN_PLURAL}/status`], verbs: ['update', 'patch'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
  ...SNAPSHOT_CONTROLLER_RULES,
];
