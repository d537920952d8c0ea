import type { CoreV1Event } from '@kubernetes/client-node';
import { API_GROUP, CONDITION_TYPES, EVENT_REASONS, REGISTRATION_CLEANUP_FINALIZER, RUN_KIND, runModeKind } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import { epochOf } from '@kruntimes/fencing';
import type { OwnershipEpoch } from '@kruntimes/fencing';
import { currentPhase, findCondition, retryBudgetStart } from '@kruntimes/run-state';
import type { RunFacts } from './decide.ts';

/** The Run an OwnerUnreachable Event is about (`namespace/name`), or undefined for any other object. */
export function runKeyOfEvent(event: ReadonlyDeep<Pick<CoreV1Event, 'involvedObject' | 'metadata' | 'reason'>>): string | undefined {
  const involved = event.involvedObject;
  if (
    event.reason !== EVENT_REASONS.ownerUnreachable ||
    involved.kind !== RUN_KIND ||
    involved.apiVersion?.startsWith(`${API_GROUP}/`) === false
  )
    return undefined;
  const namespace = involved.namespace ?? event.metadata.namespace;
  if (involved.name === undefined || namespace === undefined) return undefined;
  return `${namespace}/${involved.name}`;
}

export function epochKey(uid: string, epoch: OwnershipEpoch): string {
  return `${uid}/${String(epoch.attempt)}/${epoch.podUID}`;
}

/** What decideRecovery needs to know about a Run. */
export function runFacts(run: ReadonlyDeep<Run>): RunFacts {
  const plain = run as Run;
  return {
    phase: currentPhase(plain),
    mode: runModeKind(plain.spec),
    cancelRequested: plain.spec.cancelRequested === true,
    retryPolicy: plain.spec.retryPolicy,
    retryBudgetStart: retryBudgetStart(plain.status),
    deleting: plain.metadata.deletionTimestamp !== undefined,
    cleanupFinalizer: plain.metadata.finalizers?.includes(REGISTRATION_CLEANUP_FINALIZER) === true,
    readyReason: findCondition(plain.status?.conditions, CONDITION_TYPES.ready)?.reason,
    epoch: epochOf(plain.status),
  };
}

/** The last time the Run's state visibly changed (the Ready condition flipped, or the claim). */
export function lastChangeMs(run: ReadonlyDeep<Run>): number {
  const times = [run.status?.startTime, findCondition((run as Run).status?.conditions, CONDITION_TYPES.ready)?.lastTransitionTime]
    .map((time) => (time === undefined ? Number.NaN : Date.parse(time)))
    .filter((ms) => !Number.isNaN(ms));
  return times.length === 0 ? 0 : Math.max(...times);
}
