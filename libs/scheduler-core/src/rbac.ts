import type { PolicyRule } from '@kruntimes/api';
import { EVENT_RECORDER_RULES } from '@kruntimes/controller-runtime';
import { API_GROUP, RUN_PLURAL, RUNTIME_PLURAL } from '@kruntimes/api';
import { SNAPSHOT_CONTROLLER_RULES } from '@kruntimes/snapshot-core';

/**
 * Everything the scheduler does through the API, and nothing else (a ClusterRole when it
 * watches every namespace, a Role in its namespace otherwise): read Runs, Runtimes,
 * Runtime Pods and their ReplicaSets (which Pod template is the newest); write Run status (bind, Unschedulable, cancel before assignment); an Event
 * on a Run the admission gate refuses; keep its leader Lease. It never writes a Run's spec
 * or metadata, and never touches Pods. Its snapshot controller brings its own: read source
 * ConfigMaps, create and own snapshot ones. Cluster-scoped, so always a ClusterRole: read
 * namespaces (the block policy's label); SubjectAccessReviews (may a Run's creator still
 * `use` its Runtime, asked at assignment).
 */
export const SCHEDULER_RULES: readonly PolicyRule[] = [
  { apiGroups: [API_GROUP], resources: [RUN_PLURAL, RUNTIME_PLURAL], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [API_GROUP], resources: [`${RUN_PLURAL}/status`], verbs: ['update', 'patch'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['apps'], resources: ['replicasets'], verbs: ['get', 'list', 'watch'] },
  ...EVENT_RECORDER_RULES,
  { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
  ...SNAPSHOT_CONTROLLER_RULES,
];
