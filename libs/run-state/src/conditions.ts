import type { Condition, ConditionStatus } from '@kruntimes/api';

export interface ConditionUpdate {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
}

/**
 * Sets one condition with Kubernetes semantics: `lastTransitionTime` moves only when
 * `status` flips, `observedGeneration` is always the given generation. Returns a new
 * array; the input (possibly an informer cache object) is never modified.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  update: ConditionUpdate,
  now: string,
  observedGeneration: number | undefined,
): Condition[] {
  const existing = conditions?.find((condition) => condition.type === update.type);
  const next: Condition = {
    type: update.type,
    status: update.status,
    reason: update.reason,
    message: update.message,
    lastTransitionTime: existing?.status === update.status ? existing.lastTransitionTime : now,
    ...(observedGeneration === undefined ? {} : { observedGeneration }),
  };
  const copies = (conditions ?? []).map((condition) => ({ ...condition }));
  return existing === undefined ? [...copies, next] : copies.map((condition) => (condition.type === update.type ? next : condition));
}

export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((condition) => condition.type === type);
}

export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}
