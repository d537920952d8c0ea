import type { PolicyRule } from '@kruntimes/api';
import { API_GROUP, RUN_PLURAL } from '@kruntimes/api';

/** The leader-election Lease of stale-recovery. */
export const STALE_RECOVERY_LEASE_NAME = 'kruntimes-stale-recovery';

/**
 * Everything stale-recovery does through the API, and nothing else: read Runs, write their
 * status (Recovering, requeue, Interrupted, Failed, Cancelled) and patch the Run to drop
 * the registration-cleanup finalizer; read Runtime Pods, Services (endpoints), Pod Leases
 * and OwnerUnreachable Events; read a Run's namespace (its retry-policy annotation) before
 * an automatic retry; keep its own leader Lease (the only Lease it writes).
 */
export const STALE_RECOVERY_RULES: readonly PolicyRule[] = [
  { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list', 'watch', 'patch'] },
  { apiGroups: [API_GROUP], resources: [`${RUN_PLURAL}/status`], verbs: ['update', 'patch'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [''], resources: ['services'], verbs: ['list', 'watch'] },
  { apiGroups: [''], resources: ['events'], verbs: ['list', 'watch'] },
  { apiGroups: [''], resources: ['namespaces'], verbs: ['get'] },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'watch'] },
  // create cannot be limited to a name (the name is not known when it is authorized); update can.
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: [STALE_RECOVERY_LEASE_NAME], verbs: ['update'] },
];
