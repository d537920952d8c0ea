import type { V1Pod } from '@kubernetes/client-node';
import type { Run } from '@kruntimes/api';
import { isPodReady } from '@kruntimes/controller-runtime';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import { capacityHold, currentPhase, isExecutedElsewhere } from '@kruntimes/run-state';
import { podCapacity } from '@kruntimes/runtime-workload';
import type { PodInfo, RunInfo } from './placement.ts';
import type { RunObject } from './scheduler-caches.ts';

/**
 * Custom objects arrive as parsed JSON, so their timestamps are strings as `Run` says,
 * not the `Date`s of client-node's V1ObjectMeta that KubernetesObject claims.
 */
export function plainRun(run: ReadonlyDeep<RunObject>): ReadonlyDeep<Run> {
  return run as unknown as ReadonlyDeep<Run>;
}

export function podInfo(pod: ReadonlyDeep<V1Pod>): PodInfo {
  return {
    name: pod.metadata?.name ?? '',
    uid: pod.metadata?.uid ?? '',
    ready: isPodReady(pod) && (pod.status?.podIP ?? '') !== '',
    deleting: pod.metadata?.deletionTimestamp !== undefined,
    capacity: podCapacity(pod),
  };
}

export function runInfo(run: ReadonlyDeep<Run>): RunInfo {
  const phase = currentPhase({ status: { ...(run.status?.phase === undefined ? {} : { phase: run.status.phase }) } });
  return {
    uid: run.metadata.uid ?? '',
    name: run.metadata.name ?? '',
    creationTimestamp: run.metadata.creationTimestamp ?? '',
    phase,
    reason: run.status?.reason,
    assignedPodUID: run.status?.assignedPodUID,
    // The one occupancy count, shared with runtimed's claim check (run-state's capacityHold).
    holdsCapacity: capacityHold(run) !== undefined,
    cancelRequested: run.spec.cancelRequested === true,
    executedElsewhere: isExecutedElsewhere(run.spec),
    deleting: run.metadata.deletionTimestamp !== undefined,
    notBefore: run.status?.notBefore,
    hasSnapshot: run.status?.source !== undefined,
  };
}

/** RFC 3339 in whole seconds, as metav1.Time serialises. */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
