import type { V1Pod, V1ReplicaSet } from '@kubernetes/client-node';
import { DEFAULTS, POD_ANNOTATIONS } from '@kruntimes/api';
import type { Run, Runtime, RuntimeScaling } from '@kruntimes/api';
import { isPodReady } from '@kruntimes/controller-runtime';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import { capacityHold, currentPhase, isExecutedElsewhere } from '@kruntimes/run-state';
import { podCapacity } from '@kruntimes/runtime-workload';
import type { PodInfo, RunInfo, ScalingFacts } from './placement.ts';

/**
 * Set by the Deployment controller on a ReplicaSet and on each of its Pods: which Pod
 * template they were made from.
 */
export const POD_TEMPLATE_HASH_LABEL = 'pod-template-hash';
/** Set by the Deployment controller on each of its ReplicaSets; the highest is the newest template. */
export const DEPLOYMENT_REVISION_ANNOTATION = 'deployment.kubernetes.io/revision';

/**
 * The pod-template-hash of the Deployment's newest template: that of its ReplicaSet of the
 * highest revision (the Deployment controller's own definition of the new ReplicaSet, a
 * rollback included). Undefined when no ReplicaSet states both.
 */
export function currentTemplateHash(replicaSets: readonly ReadonlyDeep<V1ReplicaSet>[]): string | undefined {
  let newest: { revision: number; hash: string } | undefined;
  for (const replicaSet of replicaSets) {
    const revision = Number(replicaSet.metadata?.annotations?.[DEPLOYMENT_REVISION_ANNOTATION]);
    const hash = replicaSet.metadata?.labels?.[POD_TEMPLATE_HASH_LABEL];
    if (!Number.isInteger(revision) || hash === undefined) continue;
    if (newest === undefined || revision > newest.revision) newest = { revision, hash };
  }
  return newest?.hash;
}

/** `currentHash`: currentTemplateHash of the Runtime's ReplicaSets; when unknown, no Pod counts as outdated. */
export function podInfo(pod: ReadonlyDeep<V1Pod>, currentHash?: string): PodInfo {
  const hash = pod.metadata?.labels?.[POD_TEMPLATE_HASH_LABEL];
  return {
    name: pod.metadata?.name ?? '',
    uid: pod.metadata?.uid ?? '',
    ready: isPodReady(pod) && (pod.status?.podIP ?? '') !== '',
    deleting: pod.metadata?.deletionTimestamp !== undefined,
    capacity: podCapacity(pod),
    scaleDown: pod.metadata?.annotations?.[POD_ANNOTATIONS.scaleDown] === 'true',
    outdated: currentHash !== undefined && hash !== undefined && hash !== currentHash,
  };
}

/** What scalingFacts reads of a Runtime (a cached one's timestamps are strings or Dates: not read). */
interface RuntimeScalingView {
  readonly metadata: { readonly name?: string | undefined };
  readonly spec: Readonly<Pick<Runtime['spec'], 'replicas'>> & {
    readonly scaling?: Readonly<Pick<RuntimeScaling, 'maxReplicas'>> | undefined;
  };
}

/** The pool facts of a Runtime with spec.scaling; undefined without it (placement spreads, today's reasons). */
export function scalingFacts(runtime: RuntimeScalingView | undefined): ScalingFacts | undefined {
  const scaling = runtime?.spec.scaling;
  if (runtime === undefined || scaling === undefined) return undefined;
  return { runtime: runtime.metadata.name ?? '', desiredPods: runtime.spec.replicas ?? DEFAULTS.replicas, maxPods: scaling.maxReplicas };
}

export function runInfo(run: ReadonlyDeep<Run>): RunInfo {
  const phase = currentPhase({ status: { ...(run.status?.phase === undefined ? {} : { phase: run.status.phase }) } });
  return {
    uid: run.metadata.uid ?? '',
    name: run.metadata.name ?? '',
    creationTimestamp: run.metadata.creationTimestamp ?? '',
    phase,
    reason: run.status?.reason,
    message: run.status?.message,
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
