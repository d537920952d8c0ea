import type { V1Namespace, V1Pod, V1ReplicaSet } from '@kubernetes/client-node';
import { LABELS } from '@kruntimes/api';
import type { Run, RunStatus, Runtime } from '@kruntimes/api';
import { informerIndex } from '@kruntimes/controller-runtime';
import type { CacheReader, InformerFactory, Projection, ReadonlyDeep, SharedInformer, WatchOptions } from '@kruntimes/controller-runtime';
import { kept, projectedRun, transitionSpec } from '@kruntimes/run-client';
import { capacityHold, classify, currentPhase, isExecutedElsewhere } from '@kruntimes/run-state';
import { RUNTIME_COMPONENT } from '@kruntimes/runtime-workload';
import type { AssumeCache } from './assume-cache.ts';
import { runSlotCap } from './run-slot-cap.ts';

/**
 * What the scheduler process keeps of a Run (its placement pass, its routing and its
 * snapshot controller share the one cache). Kept: the metadata of runIdentity (identity,
 * resourceVersion for the fenced bind, generation, creationTimestamp for bind order and
 * latency, deletionTimestamp, finalizers for capacityHold); the spec a transition reads
 * (transitionSpec: runtime, mode, cancelRequested, retryPolicy, artifacts, origin) and
 * spec.creator (the Runtime `use` review). The status: whole while the Run is queued (the
 * scheduler writes Bind, Unschedulable and CancelBeforeAssignment from these cached
 * versions, and placement reads phase, reason, message, notBefore and source); once it
 * is placed or finished, only what counts its capacity and routes its events (phase,
 * assignedPodUID, assignedPod): the scheduler never writes such a Run, and tens of
 * thousands of finished Runs awaiting their TTL would otherwise keep their outcomes here.
 * Dropped: spec.source (the snapshot controller reads the full Run when it needs the
 * text), env, a task's args, timeout, TTL, parentRunRef, labels, annotations and
 * ownerReferences.
 */
export function schedulerRunView(run: Run): Run {
  const status = run.status === undefined || classify(currentPhase(run)) === 'queued' ? run.status : placedStatus(run.status);
  return projectedRun(run, { ...transitionSpec(run.spec), ...kept(run.spec, ['creator']) }, status);
}

/** The status of a Run the scheduler no longer places: what capacityHold and runInfo read of it. */
function placedStatus(status: RunStatus): RunStatus {
  return kept(status, ['phase', 'assignedPodUID', 'assignedPod']);
}

export const SCHEDULER_RUN_PROJECTION: Projection<Run> = { name: 'scheduler', keep: schedulerRunView };

/** The watches of the scheduler, each in the namespace it is given. */
export const RUNS: WatchOptions<Run> = { projection: SCHEDULER_RUN_PROJECTION };
/** Runtime Pods only: the component label and their Runtime's name. */
export const RUNTIME_PODS: WatchOptions<V1Pod> = {
  labelSelector: `${LABELS.component}=${RUNTIME_COMPONENT},${LABELS.runtime}`,
  name: 'runtime-pods',
};
/**
 * The ReplicaSets of Runtime Deployments (they carry the Pod template's labels): which Pod
 * template is the newest, so a Run prefers Pods a rollout keeps over Pods it replaces.
 */
export const RUNTIME_REPLICA_SETS: WatchOptions<V1ReplicaSet> = {
  labelSelector: RUNTIME_PODS.labelSelector ?? '',
  name: 'runtime-replicasets',
};

/** The caches of a scheduler of `namespace` (all when undefined), with the Run cache's indexes, before they start. */
export function schedulerCaches(informers: InformerFactory, namespace: string | undefined): SchedulerCaches {
  const caches: SchedulerCaches = {
    runs: informers.runs({ ...RUNS, namespace }),
    runtimes: informers.runtimes({ namespace }),
    pods: informers.pods({ ...RUNTIME_PODS, namespace }),
    replicaSets: informers.replicaSets({ ...RUNTIME_REPLICA_SETS, namespace }),
    // For the block policy's `kruntimes.io/blocked` label: cluster-scoped, so a scheduler of one namespace watches only that one by name.
    namespaces: informers.namespaces(namespace === undefined ? {} : { fieldSelector: `metadata.name=${namespace}` }),
  };
  addRunIndexes(caches.runs);
  return caches;
}

/** A Pending Run that placement decides on: placed here (not executed elsewhere), not being deleted. */
export function placedPending(run: ReadonlyDeep<Run>): boolean {
  return (
    classify(run.status?.phase ?? 'Pending') === 'queued' && !isExecutedElsewhere(run.spec) && run.metadata.deletionTimestamp === undefined
  );
}

const holds = (run: ReadonlyDeep<Run>): boolean => capacityHold(run) !== undefined;

/** The scheduler's indexes of the Run cache: a pass reads its Runtime's Runs, never the namespace's. */
export const RUN_INDEXES = {
  /** Runtime key -> its Pending Runs that this cluster places (placedPending). */
  pendingByRuntime: informerIndex<Run>('scheduler/pending-by-runtime', (run) => (placedPending(run) ? [runtimeKeyOfRun(run)] : [])),
  /** Runtime key -> its Runs holding a Pod unit (run-state's capacityHold). */
  holdingByRuntime: informerIndex<Run>('scheduler/holding-by-runtime', (run) => (holds(run) ? [runtimeKeyOfRun(run)] : [])),
  /** Namespace -> its Runs holding a Pod unit: the slots its run-slot cap counts. */
  holdingByNamespace: informerIndex<Run>('scheduler/holding-by-namespace', (run) => (holds(run) ? [run.metadata.namespace ?? ''] : [])),
};

/** Before the informer starts (a shared one is filled once, with every index its components added). */
function addRunIndexes(runs: SharedInformer<Run>): void {
  for (const index of Object.values(RUN_INDEXES)) runs.addIndex(index);
}

/** The read-only caches the scheduler plans from. */
export interface SchedulerCaches {
  runs: SharedInformer<Run>;
  runtimes: SharedInformer<Runtime>;
  pods: SharedInformer<V1Pod>;
  replicaSets: SharedInformer<V1ReplicaSet>;
  namespaces: SharedInformer<V1Namespace>;
}

/** The reads a placement pass makes of those caches (a test hands it FakeCaches). */
export interface SchedulerReads {
  runs: CacheReader<Run>;
  runtimes: CacheReader<Runtime>;
  pods: CacheReader<V1Pod>;
  replicaSets: CacheReader<V1ReplicaSet>;
  namespaces: CacheReader<V1Namespace>;
}

/**
 * Every Run, Runtime and Pod change enqueues its Runtime; a namespace change (its blocked
 * label, its run-slot cap) enqueues every Runtime of the namespace. So does a Run of a
 * namespace with a run-slot cap that held a slot and no longer does (ended, released,
 * requeued or deleted): a Run of any of the namespace's Runtimes may wait for it. Run
 * changes also reach the assume cache first, so an assumed bind is settled once the
 * watch shows a newer version.
 */
export function routeToRuntimes(
  caches: SchedulerCaches,
  assume: AssumeCache,
  enqueue: (key: string) => void,
  /** Every Run event, before its Runtime is enqueued. */
  runObserved: (runtimeKey: string, run: ReadonlyDeep<Run>, deleted: boolean) => void = () => undefined,
): void {
  const enqueueNamespace = (namespace: string): void => {
    for (const runtime of caches.runtimes.list(namespace)) enqueue(`${namespace}/${runtime.metadata.name ?? ''}`);
  };
  // The Runs that held a slot at their last event: one that no longer does freed it.
  const holding = new Set<string>();
  const slotFreed = (run: ReadonlyDeep<Run>, deleted: boolean): void => {
    const uid = run.metadata.uid ?? '';
    const holds = !deleted && capacityHold(run) !== undefined;
    const held = holding.has(uid);
    if (holds) holding.add(uid);
    else holding.delete(uid);
    const namespace = run.metadata.namespace ?? '';
    if (held && !holds && runSlotCap(caches.namespaces.get(namespace)?.metadata?.annotations).kind !== 'none') enqueueNamespace(namespace);
  };
  const runChanged = (run: ReadonlyDeep<Run>): void => {
    assume.observe(run.metadata.uid ?? '', run.metadata.resourceVersion);
    runObserved(runtimeKeyOfRun(run), run, false);
    enqueue(runtimeKeyOfRun(run));
    slotFreed(run, false);
  };
  caches.runs.addEventHandler({
    add: runChanged,
    update: runChanged,
    delete: (run) => {
      assume.deleted(run.metadata.uid ?? '');
      runObserved(runtimeKeyOfRun(run), run, true);
      enqueue(runtimeKeyOfRun(run));
      slotFreed(run, true);
    },
  });
  caches.runtimes.enqueueTo(enqueue);
  caches.pods.enqueueTo(enqueue, runtimeKeyOf);
  caches.replicaSets.enqueueTo(enqueue, runtimeKeyOf);
  const namespaceChanged = (namespace: ReadonlyDeep<V1Namespace>): void => {
    enqueueNamespace(namespace.metadata?.name ?? '');
  };
  caches.namespaces.addEventHandler({ add: namespaceChanged, update: namespaceChanged, delete: namespaceChanged });
}

export function runtimeKeyOfRun(run: ReadonlyDeep<Run>): string {
  return `${run.metadata.namespace ?? ''}/${run.spec.runtime}`;
}

/** A Runtime Pod's or ReplicaSet's Runtime, from its label. */
function runtimeKeyOf(object: ReadonlyDeep<V1Pod | V1ReplicaSet>): string | undefined {
  const runtime = object.metadata?.labels?.[LABELS.runtime];
  return runtime === undefined ? undefined : `${object.metadata?.namespace ?? ''}/${runtime}`;
}
