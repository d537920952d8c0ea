import type { KubernetesObject, V1Deployment, V1Pod, V1PodDisruptionBudget, V1Secret, V1Service } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, DEFAULTS, LABELS, REGISTRATION_CLEANUP_FINALIZER, RUNTIME_KIND } from '@kruntimes/api';
import type { ArtifactStore, Run, RunInput, RunPhase, RunStatus, Runtime } from '@kruntimes/api';
import { informerIndex, isPodReady } from '@kruntimes/controller-runtime';
import { waitsForSlot } from '@kruntimes/pool-core';
import type { CacheReader, Projection, ReadonlyDeep, SharedInformer } from '@kruntimes/controller-runtime';
import { kept, projectedRun } from '@kruntimes/run-client';
import { capacityHold, classify, currentPhase, holdsCapacity, isTerminal, mayBeCollected } from '@kruntimes/run-state';
import { podCapacity } from '@kruntimes/runtime-workload';
import type { CollectableRun } from './collection.ts';
import type { ManagerMetricsSnapshot } from './metrics.ts';
import type { RuntimePodView } from './runtime-status.ts';

/** The read-only caches every controller of the controller-manager reads. */
export interface ManagerCaches {
  runtimes: SharedInformer<Runtime>;
  runs: SharedInformer<Run>;
  /** Runtime Pods only (component and runtime labels). */
  pods: SharedInformer<V1Pod>;
  /** Only what this controller-manager made (managed-by label): never a namespace's other objects. */
  deployments: SharedInformer<V1Deployment>;
  services: SharedInformer<V1Service>;
  disruptionBudgets: SharedInformer<V1PodDisruptionBudget>;
  secrets: SharedInformer<V1Secret>;
  artifactStores: SharedInformer<ArtifactStore>;
  runInputs: SharedInformer<RunInput>;
}

/** The reads of the ManagerCaches (what a reconciler takes, so that a test hands it FakeCaches). */
export type ManagerCacheReaders = {
  [K in keyof ManagerCaches]: ManagerCaches[K] extends SharedInformer<infer T> ? CacheReader<T> : never;
};

/**
 * What the controller-manager keeps of a Run. None of its controllers writes a Run from this
 * cache (the waiting-input and RunInput writes read the live Run, collection deletes are
 * preconditioned on uid and resourceVersion), so it keeps only what they read:
 * - metadata of runIdentity: identity, resourceVersion (delete preconditions),
 *   creationTimestamp (history order), deletionTimestamp, finalizers (capacity held);
 * - spec.runtime (demand, metrics, history), cancelRequested and timeout (a waiting Run's
 *   cancel and timeout), ttlSecondsAfterFinished (TTL), the mode (a task's args dropped);
 * - status phase, reason (waiting for a slot), assignedPodUID (capacity per Pod), attempt
 *   (artifact retention), startTime (wait timeout), completionTime (TTL, history), and
 *   waitingInput and resume while the Run is not terminal (checkpoints still needed).
 * Dropped: the source, env, retryPolicy, artifacts, origin (the origin controller has its
 * own, label-selected cache), creator, labels, annotations, conditions, message, outputs,
 * endpoint, artifacts, responses, the source snapshot.
 */
export function managerRunView(run: Run): Run {
  const spec = run.spec;
  const status = run.status;
  const active = !isTerminal(currentPhase(run));
  const keptStatus: RunStatus | undefined =
    status === undefined
      ? undefined
      : {
          ...kept(status, ['phase', 'reason', 'assignedPodUID', 'attempt', 'startTime', 'completionTime']),
          ...(active ? kept(status, ['waitingInput', 'resume']) : {}),
        };
  const keptSpec = {
    runtime: spec.runtime,
    source: {},
    mode: spec.mode.function === undefined ? { task: {} } : { function: spec.mode.function },
    ...kept(spec, ['cancelRequested', 'timeout', 'ttlSecondsAfterFinished']),
  };
  return projectedRun(run, keptSpec, keptStatus);
}

/** The one Run projection of the controller-manager's shared Run cache (see managerRunView). */
export const MANAGER_RUN_PROJECTION: Projection<Run> = { name: 'controller-manager', keep: managerRunView };

export function phaseOf(run: ReadonlyDeep<Run>): RunPhase {
  return currentPhase({ status: run.status?.phase === undefined ? {} : { phase: run.status.phase } });
}

export function cleanupPending(run: ReadonlyDeep<Run>): boolean {
  return run.metadata.finalizers?.includes(REGISTRATION_CLEANUP_FINALIZER) === true;
}

export function collectable(run: ReadonlyDeep<Run>): CollectableRun {
  const meta = run.metadata;
  return {
    name: meta.name ?? '',
    uid: meta.uid ?? '',
    resourceVersion: meta.resourceVersion ?? '',
    phase: phaseOf(run),
    creationTimestamp: meta.creationTimestamp ?? '',
    completionTime: run.status?.completionTime,
    ttlSecondsAfterFinished: run.spec.ttlSecondsAfterFinished,
    deleting: meta.deletionTimestamp !== undefined,
  };
}

export function podView(pod: ReadonlyDeep<V1Pod>): RuntimePodView {
  return { ready: isPodReady(pod), deleting: pod.metadata?.deletionTimestamp !== undefined, capacity: podCapacity(pod) };
}

/** What a Runtime's Runs ask of its Pods: Runs holding a slot (in all and per Pod UID) and Runs waiting Pending for one. */
export interface RuntimeDemand {
  held: number;
  heldByPod: Map<string, number>;
  pending: number;
}

/** A Run's classes in a Runtime's demand: holding a slot, holding one of a Pod (capacityHold), waiting Pending for one. */
export type DemandClass = 'held' | 'holdsPod' | 'pending';

/** Which of a Runtime's demand classes a Run counts in (runtimeDemand reads them through RUN_INDEXES.demand). */
export function demandClasses(run: ReadonlyDeep<Run>): DemandClass[] {
  const phase = phaseOf(run);
  const classes: DemandClass[] = [];
  if (holdsCapacity(phase, cleanupPending(run))) classes.push('held');
  else if (classify(phase) === 'queued' && run.metadata.deletionTimestamp === undefined && waitsForSlot(run.status?.reason))
    classes.push('pending');
  if (capacityHold(run) !== undefined) classes.push('holdsPod');
  return classes;
}

/** The controller-manager's indexes of its Run cache: what a Runtime's controllers count, never a scan of the namespace. */
export const RUN_INDEXES = {
  /** `<runtime key>|<class>` for each class of demandClasses: counted, or listed when bounded by capacity. */
  demand: informerIndex<Run, `${string}|${DemandClass}`>('controller-manager/demand', (run) =>
    demandClasses(run).map((demand) => `${runtimeKeyOfRun(run)}|${demand}` as const),
  ),
  /** Runtime key -> its finished Runs that history collection may delete. */
  collectable: informerIndex<Run>('controller-manager/collectable', (run) => {
    const view = collectable(run);
    return !view.deleting && mayBeCollected(view.phase) ? [runtimeKeyOfRun(run)] : [];
  }),
};

/** Files every cached Run under its Runtime's demand classes and, once finished, as collectable. Before the cache starts. */
export function addRunIndexes(runs: SharedInformer<Run>): void {
  runs.addIndex(RUN_INDEXES.demand);
  runs.addIndex(RUN_INDEXES.collectable);
}

/**
 * The Runtime's demand from the indexes: the Pending count without reading a Run, and the
 * slots held per Pod from the Runs that hold one (bounded by the Runtime's capacity, not by
 * its queue), so a Runtime with tens of thousands of queued Runs costs what its Pods hold.
 */
export function runtimeDemand(caches: Pick<ManagerCacheReaders, 'runs'>, runtime: ReadonlyDeep<Runtime>): RuntimeDemand {
  const key = `${runtime.metadata.namespace ?? ''}/${runtime.metadata.name ?? ''}`;
  const heldByPod = new Map<string, number>();
  for (const run of caches.runs.byIndex(RUN_INDEXES.demand, `${key}|holdsPod`)) {
    const hold = capacityHold(run);
    if (hold !== undefined) heldByPod.set(hold.podUID, (heldByPod.get(hold.podUID) ?? 0) + 1);
  }
  return {
    held: caches.runs.countByIndex(RUN_INDEXES.demand, `${key}|held`),
    heldByPod,
    pending: caches.runs.countByIndex(RUN_INDEXES.demand, `${key}|pending`),
  };
}

/** The key of the Runtime a Run runs on. */
export function runtimeKeyOfRun(run: ReadonlyDeep<Run>): string {
  return `${run.metadata.namespace ?? ''}/${run.spec.runtime}`;
}

/** The key of the Runtime a Runtime Pod belongs to (its runtime label). */
export function runtimeKeyOfPod(pod: ReadonlyDeep<V1Pod>): string | undefined {
  const runtime = pod.metadata?.labels?.[LABELS.runtime];
  return runtime === undefined ? undefined : `${pod.metadata?.namespace ?? ''}/${runtime}`;
}

/** The key of the Runtime that is the controller of an owned object. */
export function runtimeKeyOfOwned(object: ReadonlyDeep<KubernetesObject>): string | undefined {
  const owner = object.metadata?.ownerReferences?.find(
    (ref) => ref.controller === true && ref.kind === RUNTIME_KIND && ref.apiVersion === `${API_GROUP}/${API_VERSION}`,
  );
  return owner === undefined ? undefined : `${object.metadata?.namespace ?? ''}/${owner.name}`;
}

/** What the metrics need, read from the caches only. */
export function metricsSnapshot(caches: Pick<ManagerCaches, 'runtimes' | 'runs' | 'pods'>): ManagerMetricsSnapshot {
  return {
    runtimes: caches.runtimes.list().map((runtime) => ({
      namespace: runtime.metadata.namespace ?? '',
      name: runtime.metadata.name ?? '',
      runsPerPod: runtime.spec.runs,
      desiredPods: runtime.spec.replicas ?? DEFAULTS.replicas,
      maxPods: runtime.spec.scaling?.maxReplicas ?? runtime.spec.replicas ?? DEFAULTS.replicas,
    })),
    runs: caches.runs.list().map((run) => ({
      namespace: run.metadata.namespace ?? '',
      runtime: run.spec.runtime,
      phase: phaseOf(run),
      cleanupPending: cleanupPending(run),
      deleting: run.metadata.deletionTimestamp !== undefined,
    })),
    pods: caches.pods.list().flatMap((pod) => {
      const runtime = pod.metadata?.labels?.[LABELS.runtime];
      return runtime === undefined ? [] : [{ namespace: pod.metadata?.namespace ?? '', runtime, ...podView(pod) }];
    }),
  };
}
