import type { PolicyRule } from '@kruntimes/api';
import { API_GROUP, RUN_PLURAL, RUN_SCHEDULE_PLURAL, RUNTIME_PLURAL, RUNTIME_USE_VERB } from '@kruntimes/api';

/**
 * What the schedule controller does through the API (granted to the controller-manager,
 * which runs it): read RunSchedules and replace their status; create their Runs (owner
 * references with blockOwnerDeletion need update on the owner's finalizers subresource)
 * and delete finished ones past the history limits. Never patch, never a Run's status.
 * Creating a Run needs `use` on its Runtime (the admission policy): the controller-manager
 * may use every Runtime, and the policy checked that whoever wrote the RunSchedule may too.
 */
export const SCHEDULE_CONTROLLER_RULES: readonly PolicyRule[] = [
  { apiGroups: [API_GROUP], resources: [RUN_SCHEDULE_PLURAL], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [API_GROUP], resources: [`${RUN_SCHEDULE_PLURAL}/status`], verbs: ['update'] },
  { apiGroups: [API_GROUP], resources: [`${RUN_SCHEDULE_PLURAL}/finalizers`], verbs: ['update'] },
  { apiGroups: [API_GROUP], resources: [RUN_PLURAL], verbs: ['get', 'list', 'watch', 'create', 'delete'] },
  { apiGroups: [API_GROUP], resources: [RUNTIME_PLURAL], verbs: [RUNTIME_USE_VERB] },
];
