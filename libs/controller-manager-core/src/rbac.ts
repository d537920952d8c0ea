import type { PolicyRule } from '@kruntimes/api';
import { EVENT_RECORDER_RULES } from '@kruntimes/controller-runtime';
import { API_GROUP, ARTIFACT_STORE_PLURAL, RUN_INPUT_PLURAL, RUN_PLURAL, RUNTIME_PLURAL } from '@kruntimes/api';
import { SCHEDULE_CONTROLLER_RULES } from '@kruntimes/schedule-core';
import { ORIGIN_CONTROLLER_RULES } from './origin-controller.ts';

/**
 * Everything the controller-manager does through the API: own Runtimes' Deployments,
 * Services, PodDisruptionBudgets and runtimed TLS Secrets `<runtime>-runtimed-tls` (owner references with
 * blockOwnerDeletion need update on the owner's finalizers subresource), write Runtime
 * status, read Runtime Pods, delete finished Runs (TTL and GC; never their status), keep
 * its leader Lease, read ArtifactStores and their credentials Secrets (get) and write their
 * status (the retention controller), read RunInputs and write their status, and write the status of
 * Runs waiting for input (InputReceived, WaitTimedOut, WaitCancelled: the RunInput controller), and record
 * an Event on a Run for each decided response. The autoscaler patches a Runtime's spec.replicas
 * and its Pods' scale-down and deletion-cost annotations (merge patches fenced on the read
 * resourceVersion) and records Events on the Runtime; every other write is a create or an update
 * fenced on the read resourceVersion. RBAC cannot narrow list/watch of Secrets by label; the informer
 * does (managed-by), and grant these rules only in the namespaces it manages. The schedule
 * controller it also runs brings its own (RunSchedules, and creating their Runs), and so
 * does the origin controller (the status of Runs synced from `krt run --local`).
 */
export const CONTROLLER_MANAGER_RULES: readonly PolicyRule[] = [
  { apiGroups: [API_GROUP], resources: [RUNTIME_PLURAL], verbs: ['get', 'list', 'watch', 'patch'] },
  { apiGroups: [API_GROUP], resources: [`${RUNTIME_PLURAL}/status`], verbs: ['update', 'patch'] },
  { apiGroups: [API_GROUP], resources: [`${RUNTIME_PLURAL}/finalizers`], verbs: ['update'] },
  { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list', 'watch', 'delete'] },
  { apiGroups: [API_GROUP], resources: [`${RUN_PLURAL}/status`], verbs: ['update'] },
  { apiGroups: [API_GROUP], resources: [RUN_INPUT_PLURAL], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [API_GROUP], resources: [`${RUN_INPUT_PLURAL}/status`], verbs: ['update'] },
  ...EVENT_RECORDER_RULES,
  { apiGroups: [API_GROUP], resources: [ARTIFACT_STORE_PLURAL], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [API_GROUP], resources: [`${ARTIFACT_STORE_PLURAL}/status`], verbs: ['update', 'patch'] },
  { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list', 'watch', 'create', 'update'] },
  { apiGroups: [''], resources: ['services'], verbs: ['get', 'list', 'watch', 'create', 'update'] },
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch', 'create', 'update'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'patch'] },
  { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: ['get', 'list', 'watch', 'create', 'update'] },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
  ...SCHEDULE_CONTROLLER_RULES,
  ...ORIGIN_CONTROLLER_RULES,
];
