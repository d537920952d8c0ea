import type { CoreV1Event, V1Lease, V1Pod, V1Service } from '@kubernetes/client-node';
import { CONDITION_TYPES, EVENT_REASONS, LABELS } from '@kruntimes/api';
import type { Run, RunStatus } from '@kruntimes/api';
import { objectKey } from '@kruntimes/controller-runtime';
import type { InformerFactory, Projection, ReadonlyDeep, SharedInformer, WatchOptions } from '@kruntimes/controller-runtime';
import { kept, projectedRun } from '@kruntimes/run-client';
import { currentPhase, findCondition, isTerminal } from '@kruntimes/run-state';
import { runKeyOfEvent } from './run-facts.ts';

/**
 * What stale recovery keeps of a Run: what runFacts, lastChangeMs, the evidence and the
 * routing read. Every write reads the live Run first (RunWrites.live), so nothing here is
 * written back. Kept: the metadata of runIdentity (identity, deletionTimestamp, the
 * cleanup finalizer); spec.runtime, the mode (a task's args dropped), cancelRequested and
 * retryPolicy; status phase, attempt, assignedPod, assignedPodUID, startTime, plannedMoves,
 * the Ready condition, and `resume` while the Run is not terminal (its retry budget).
 * Dropped: the source, env, the rest of the spec, labels, annotations, the other conditions,
 * message, outputs, endpoint, artifacts, responses, waitingInput, source snapshot.
 */
export function recoveryRunView(run: Run): Run {
  const spec = run.spec;
  const status = run.status;
  const ready = findCondition(status?.conditions, CONDITION_TYPES.ready);
  const keptStatus: RunStatus | undefined =
    status === undefined
      ? undefined
      : {
          ...kept(status, ['phase', 'attempt', 'assignedPod', 'assignedPodUID', 'startTime', 'plannedMoves']),
          ...(ready === undefined ? {} : { conditions: [ready] }),
          ...(status.resume === undefined || isTerminal(currentPhase(run)) ? {} : { resume: status.resume }),
        };
  const keptSpec = {
    runtime: spec.runtime,
    source: {},
    mode: spec.mode.function === undefined ? { task: {} } : { function: spec.mode.function },
    ...kept(spec, ['cancelRequested', 'retryPolicy']),
  };
  return projectedRun(run, keptSpec, keptStatus);
}

export const RECOVERY_RUN_PROJECTION: Projection<Run> = { name: 'stale-recovery', keep: recoveryRunView };

/** The watches of stale recovery, each in the namespace it is given. */
export const RUNS: WatchOptions<Run> = { projection: RECOVERY_RUN_PROJECTION };
/** Runtime Pods and Services carry their Runtime's name. */
export const RUNTIME_PODS: WatchOptions<V1Pod> = { labelSelector: LABELS.runtime, name: 'runtime-pods' };
export const RUNTIME_SERVICES: WatchOptions<V1Service> = { labelSelector: LABELS.runtime, name: 'runtime-services' };
/** The label Pod Leases carry (runtimed's PodLease). */
export const POD_LEASES: WatchOptions<V1Lease> = { labelSelector: `${LABELS.component}=runtimed,${LABELS.runtime}`, name: 'pod-leases' };
/** runtimed's word that it cannot reach a Run's owner. */
export const OWNER_UNREACHABLE_EVENTS: WatchOptions<CoreV1Event> = {
  fieldSelector: `reason=${EVENT_REASONS.ownerUnreachable}`,
  name: 'owner-unreachable-events',
};

/** The caches of stale recovery in `namespace` (all when undefined). */
export function recoveryCaches(informers: InformerFactory, namespace: string | undefined): RecoveryCaches {
  return {
    runs: informers.runs({ ...RUNS, namespace }),
    pods: informers.pods({ ...RUNTIME_PODS, namespace }),
    services: informers.services({ ...RUNTIME_SERVICES, namespace }),
    leases: informers.leases({ ...POD_LEASES, namespace }),
    events: informers.events({ ...OWNER_UNREACHABLE_EVENTS, namespace }),
  };
}

/** The read-only caches stale recovery decides from. */
export interface RecoveryCaches {
  runs: SharedInformer<Run>;
  /** Runtime Pods only (runtime label). */
  pods: SharedInformer<V1Pod>;
  /** Runtime Services only (runtime label). */
  services: SharedInformer<V1Service>;
  /** runtimed's Pod Leases only. */
  leases: SharedInformer<V1Lease>;
  /** OwnerUnreachable Events only. */
  events: SharedInformer<CoreV1Event>;
}

export interface RunRouting {
  enqueue(key: string): void;
  /** A deleted Run: drop what was remembered about it. */
  forget(uid: string): void;
}

/** Every change that can change the evidence about a Run's owner enqueues that Run. */
export function routeToRuns(caches: RecoveryCaches, route: RunRouting): void {
  const { runs, pods, services, leases, events } = caches;
  runs.addEventHandler({
    add: (run) => {
      route.enqueue(objectKey(run));
    },
    update: (run) => {
      route.enqueue(objectKey(run));
    },
    delete: (run) => {
      route.forget(run.metadata.uid ?? '');
    },
  });
  const runsWhere = (ns: string | undefined, match: (run: ReadonlyDeep<Run>) => boolean): void => {
    for (const run of runs.list(ns)) if (match(run)) route.enqueue(objectKey(run));
  };
  const podChanged = (pod: ReadonlyDeep<V1Pod>): void => {
    const uid = pod.metadata?.uid;
    runsWhere(pod.metadata?.namespace, (run) => run.status?.assignedPodUID === uid);
  };
  pods.addEventHandler({ add: podChanged, update: podChanged, delete: podChanged });
  const leaseChanged = (lease: ReadonlyDeep<V1Lease>): void => {
    const pod = lease.metadata?.name;
    runsWhere(lease.metadata?.namespace, (run) => run.status?.assignedPod === pod);
  };
  leases.addEventHandler({ add: leaseChanged, update: leaseChanged, delete: leaseChanged });
  const serviceChanged = (service: ReadonlyDeep<V1Service>): void => {
    const runtime = service.metadata?.name;
    runsWhere(service.metadata?.namespace, (run) => run.spec.runtime === runtime);
  };
  services.addEventHandler({ add: serviceChanged, update: serviceChanged, delete: serviceChanged });
  // runtimed found the owner unreachable: look at that Run at once instead of waiting for the Lease.
  const eventSeen = (event: ReadonlyDeep<CoreV1Event>): void => {
    const key = runKeyOfEvent(event);
    if (key !== undefined) route.enqueue(key);
  };
  events.addEventHandler({ add: eventSeen, update: eventSeen });
}
