import type { PolicyRule } from '@kruntimes/api';
import { EVENT_RECORDER_RULES } from '@kruntimes/controller-runtime';
import { API_GROUP, ARTIFACT_STORE_PLURAL, RUN_PLURAL } from '@kruntimes/api';

/**
 * What runtimed's ServiceAccount needs in its Runtime's namespace (a Role, not a
 * ClusterRole): read Runs and write their status and the cleanup finalizer, read the
 * ConfigMaps that hold Run sources, watch its Runtime's Pods, keep its Pod Lease, and
 * record the OwnerUnreachable Event on a Run whose owner it could not reach, and read its
 * own Namespace (the retry-policy annotation, before an interrupted retrySafe task runs
 * again: a RoleBinding grants `get` on the namespace it is in, nothing more). For
 * artifacts it reads ArtifactStores and their credentials Secrets: runtimed presigns the
 * upload grants and verifies the objects itself, so only runtimed (whose container alone
 * mounts the ServiceAccount token) holds the store's keys; the Runtime Server container
 * and the user code get presigned URLs, never the Secret.
 */
export const RUNTIMED_ROLE_RULES: readonly PolicyRule[] = [
  { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list', 'watch', 'update', 'patch'] },
  { apiGroups: [API_GROUP], resources: [`${RUN_PLURAL}/status`], verbs: ['get', 'update', 'patch'] },
  { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
  ...EVENT_RECORDER_RULES,
  { apiGroups: [''], resources: ['namespaces'], verbs: ['get'] },
  { apiGroups: [API_GROUP], resources: [ARTIFACT_STORE_PLURAL], verbs: ['get'] },
  { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
];
