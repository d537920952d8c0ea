import { ApiException, CoreV1Api, CoordinationV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { CoreV1Event, KubeConfig, KubernetesListObject, KubernetesObject, V1Lease, V1Pod, V1Service } from '@kubernetes/client-node';
import {
  API_GROUP,
  API_VERSION,
  CONDITION_TYPES,
  EVENT_REASONS,
  LABELS,
  REGISTRATION_CLEANUP_FINALIZER,
  RUN_KIND,
  RUN_PLURAL,
  RUN_REASONS,
  runModeKind,
} from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { Controller, SharedInformer, objectKey, serviceEndpoints, splitObjectKey } from '@kruntimes/controller-runtime';
import type { ControllerLogger, ReadonlyDeep, ReconcileResult } from '@kruntimes/controller-runtime';
import { epochOf } from '@kruntimes/fencing';
import type { OwnerEvidence, OwnershipEpoch } from '@kruntimes/fencing';
import { classify, currentPhase, findCondition, transition } from '@kruntimes/run-state';
import type { RunEvent } from '@kruntimes/run-state';
import { decideRecovery } from './decide.ts';
import type { RecoveryAction, RunFacts } from './decide.ts';
import { leaseState, ownerEvidence } from './evidence.ts';
import type { LeaseFacts, PodFacts } from './evidence.ts';
import { includesRef, readLeaseReport } from './lease-report.ts';
import { RecoveryMetrics } from './metrics.ts';
import { ReportingTracker } from './reporting-tracker.ts';

export type RunObject = Run & KubernetesObject;

export interface StaleRecoveryOptions {
  kubeConfig: KubeConfig;
  /** Watch one namespace; all namespaces when undefined. */
  namespace?: string;
  logger: ControllerLogger & { info(object: object, message: string): void };
  metrics?: RecoveryMetrics;
  workers?: number;
  /** Every Run is looked at again this often even if nothing changed (0: never). Default 5 minutes. */
  resyncMs?: number;
  /** A suspect Run is looked at again at least this often. Default 10 s. */
  recheckMs?: number;
  /** Consecutive Lease renewals without the Run, and their minimum span, before the owner counts as having stopped reporting it. */
  reportingGrace?: { renewals?: number; minGraceMs?: number };
  /** Milliseconds since the epoch; injectable for tests. */
  now?: () => number;
}

/** Look again this soon after a write lost a race (409) or the cache lagged the live Run. */
const CONFLICT_RETRY_MS = 200;
/** The label Pod Leases carry (runtimed's PodLease). */
const POD_LEASE_SELECTOR = `${LABELS.component}=runtimed,${LABELS.runtime}`;
/** Runtime Pods and Services carry their Runtime's name. */
const RUNTIME_OBJECT_SELECTOR = LABELS.runtime;

/**
 * Detects lost owners of Runs and recovers them (ARCHITECTURE §4, §5, §9). The unit of
 * work is a Run key. Each reconcile gathers the evidence about the Run's owner from the
 * caches (the exact Pod UID, its deletion, its place in the Service endpoints, its Lease
 * and what that Lease reports), lets `decideRecovery` choose one action, and performs it
 * as one write: re-read the live Run, re-check its epoch, decide again on it, and write
 * with its resourceVersion (409: look again). A suspect owner only makes the Run
 * Ready=False Recovering; a new attempt starts only after the fence. Run this only while
 * holding the leader Lease.
 */
export class StaleRecovery {
  readonly metrics: RecoveryMetrics;
  readonly #options: StaleRecoveryOptions;
  readonly #custom: CustomObjectsApi;
  readonly #runs: SharedInformer<RunObject>;
  readonly #pods: SharedInformer<V1Pod>;
  readonly #services: SharedInformer<V1Service>;
  readonly #leases: SharedInformer<V1Lease>;
  readonly #events: SharedInformer<CoreV1Event>;
  readonly #controller: Controller;
  readonly #tracker: ReportingTracker;
  readonly #now: () => number;
  /** `uid/attempt` -> when that epoch was first suspected (for the fence-wait histogram). */
  readonly #suspectedAt = new Map<string, number>();
  #resyncTimer: NodeJS.Timeout | undefined;

  constructor(options: StaleRecoveryOptions) {
    this.#options = options;
    this.metrics = options.metrics ?? new RecoveryMetrics();
    this.#now = options.now ?? Date.now;
    this.#tracker = new ReportingTracker(options.reportingGrace);
    const { kubeConfig, namespace, logger } = options;
    this.#custom = kubeConfig.makeApiClient(CustomObjectsApi);
    const custom = this.#custom;
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const coordination = kubeConfig.makeApiClient(CoordinationV1Api);
    const prefix = namespace === undefined ? '' : `/namespaces/${namespace}`;
    const scoped =
      <T>(all: () => Promise<T>, one: (ns: string) => Promise<T>) =>
      (): Promise<T> =>
        namespace === undefined ? all() : one(namespace);

    this.#runs = new SharedInformer<RunObject>({
      name: 'runs',
      kubeConfig,
      path: `/apis/${API_GROUP}/${API_VERSION}${prefix}/${RUN_PLURAL}`,
      list: scoped(
        () =>
          custom.listClusterCustomObject({ group: API_GROUP, version: API_VERSION, plural: RUN_PLURAL }) as Promise<
            KubernetesListObject<RunObject>
          >,
        (ns) =>
          custom.listNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace: ns, plural: RUN_PLURAL }) as Promise<
            KubernetesListObject<RunObject>
          >,
      ),
      logger,
    });
    this.#pods = new SharedInformer<V1Pod>({
      name: 'runtime-pods',
      kubeConfig,
      path: `/api/v1${prefix}/pods`,
      labelSelector: RUNTIME_OBJECT_SELECTOR,
      list: scoped(
        () => core.listPodForAllNamespaces({ labelSelector: RUNTIME_OBJECT_SELECTOR }),
        (ns) => core.listNamespacedPod({ namespace: ns, labelSelector: RUNTIME_OBJECT_SELECTOR }),
      ),
      logger,
    });
    this.#services = new SharedInformer<V1Service>({
      name: 'runtime-services',
      kubeConfig,
      path: `/api/v1${prefix}/services`,
      labelSelector: RUNTIME_OBJECT_SELECTOR,
      list: scoped(
        () => core.listServiceForAllNamespaces({ labelSelector: RUNTIME_OBJECT_SELECTOR }),
        (ns) => core.listNamespacedService({ namespace: ns, labelSelector: RUNTIME_OBJECT_SELECTOR }),
      ),
      logger,
    });
    this.#leases = new SharedInformer<V1Lease>({
      name: 'pod-leases',
      kubeConfig,
      path: `/apis/coordination.k8s.io/v1${prefix}/leases`,
      labelSelector: POD_LEASE_SELECTOR,
      list: scoped(
        () => coordination.listLeaseForAllNamespaces({ labelSelector: POD_LEASE_SELECTOR }),
        (ns) => coordination.listNamespacedLease({ namespace: ns, labelSelector: POD_LEASE_SELECTOR }),
      ),
      logger,
    });
    // The informer has no field selector option; the watch path carries it as a query.
    const eventSelector = `reason=${EVENT_REASONS.ownerUnreachable}`;
    this.#events = new SharedInformer<CoreV1Event>({
      name: 'owner-unreachable-events',
      kubeConfig,
      path: `/api/v1${prefix}/events?fieldSelector=${encodeURIComponent(eventSelector)}`,
      list: scoped(
        () => core.listEventForAllNamespaces({ fieldSelector: eventSelector }),
        (ns) => core.listNamespacedEvent({ namespace: ns, fieldSelector: eventSelector }),
      ),
      logger,
    });
    this.#controller = new Controller({
      name: 'stale-recovery',
      logger,
      workers: options.workers ?? 2,
      reconcile: (key) => this.reconcile(key),
    });

    const enqueue = (key: string): void => {
      this.#controller.enqueue(key);
    };
    this.#runs.addEventHandler({
      add: (run) => {
        enqueue(objectKey(run));
      },
      update: (run) => {
        enqueue(objectKey(run));
      },
      delete: (run) => {
        this.#forgetRun(run.metadata.uid ?? '');
      },
    });
    const runsWhere = (ns: string | undefined, match: (run: ReadonlyDeep<RunObject>) => boolean): void => {
      for (const run of this.#runs.list(ns)) if (match(run)) enqueue(objectKey(run));
    };
    const podChanged = (pod: ReadonlyDeep<V1Pod>): void => {
      const uid = pod.metadata?.uid;
      runsWhere(pod.metadata?.namespace, (run) => run.status?.assignedPodUID === uid);
    };
    this.#pods.addEventHandler({ add: podChanged, update: podChanged, delete: podChanged });
    const leaseChanged = (lease: ReadonlyDeep<V1Lease>): void => {
      const pod = lease.metadata?.name;
      runsWhere(lease.metadata?.namespace, (run) => run.status?.assignedPod === pod);
    };
    this.#leases.addEventHandler({ add: leaseChanged, update: leaseChanged, delete: leaseChanged });
    const serviceChanged = (service: ReadonlyDeep<V1Service>): void => {
      const runtime = service.metadata?.name;
      runsWhere(service.metadata?.namespace, (run) => run.spec.runtime === runtime);
    };
    this.#services.addEventHandler({ add: serviceChanged, update: serviceChanged, delete: serviceChanged });
    // runtimed found the owner unreachable: look at that Run at once instead of waiting for the Lease.
    const eventSeen = (event: ReadonlyDeep<CoreV1Event>): void => {
      const key = runKeyOfEvent(event);
      if (key !== undefined) enqueue(key);
    };
    this.#events.addEventHandler({ add: eventSeen, update: eventSeen });
  }

  /** Fills every cache, then starts reconciling: the first decision sees complete caches. */
  async start(): Promise<void> {
    await Promise.all([this.#runs.start(), this.#pods.start(), this.#services.start(), this.#leases.start(), this.#events.start()]);
    this.#controller.start();
    const resyncMs = this.#options.resyncMs ?? 300_000;
    if (resyncMs > 0) {
      this.#resyncTimer = setInterval(() => {
        for (const run of this.#runs.list(this.#options.namespace)) this.#controller.enqueue(objectKey(run));
      }, resyncMs);
      this.#resyncTimer.unref();
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.#resyncTimer);
    await this.#controller.stop();
    await Promise.all([this.#runs.stop(), this.#pods.stop(), this.#services.stop(), this.#leases.stop(), this.#events.stop()]);
  }

  /** One look at one Run: gather the evidence, decide, and act when there is something to do. */
  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const { namespace = '', name } = splitObjectKey(key);
    const cached = this.#runs.get(name, namespace);
    if (cached === undefined) return undefined;
    const run = cached as unknown as ReadonlyDeep<Run>;
    const facts = runFacts(run);
    if (facts.epoch === undefined && !(facts.deleting && facts.cleanupFinalizer)) return undefined;
    const nowMs = this.#now();
    const action = decideRecovery(facts, this.#evidence(namespace, run, facts, nowMs));
    switch (action.type) {
      case 'none':
        return this.#nextLook(namespace, facts.epoch, nowMs);
      case 'wait':
        this.#suspected(run, facts.epoch, nowMs);
        return { requeueAfterMs: this.#recheckMs() };
      case 'markRecovering':
      case 'recovered':
      case 'requeue':
      case 'interrupt':
      case 'fail':
      case 'cancel':
      case 'removeFinalizer':
        return this.#act(namespace, name, run.metadata.uid ?? '');
    }
  }

  /**
   * The write: read the live Run, decide again on it (the cache may lag), and write with
   * its resourceVersion. A 409 or a live Run that moved on means: look again shortly.
   */
  async #act(namespace: string, name: string, uid: string): Promise<ReconcileResult | undefined> {
    let live: Run;
    try {
      live = (await this.#custom.getNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace,
        plural: RUN_PLURAL,
        name,
      })) as Run;
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) return undefined;
      throw error;
    }
    if (live.metadata.uid !== uid) return undefined;
    const facts = runFacts(live);
    const nowMs = this.#now();
    const action = decideRecovery(facts, this.#evidence(namespace, live, facts, nowMs));
    const epoch = facts.epoch;
    const log = { run: `${namespace}/${name}`, runUID: uid, attempt: epoch?.attempt, pod: epoch?.pod, podUID: epoch?.podUID };
    try {
      switch (action.type) {
        case 'none':
          return this.#nextLook(namespace, epoch, nowMs);
        case 'wait':
          this.#suspected(live, epoch, nowMs);
          return { requeueAfterMs: this.#recheckMs() };
        case 'markRecovering':
          this.#suspected(live, epoch, nowMs);
          await this.#transition(live, { type: 'MarkRecovering', message: action.message }, nowMs);
          this.metrics.recovery(action.cause, 'markedRecovering');
          this.#options.logger.info({ ...log, cause: action.cause }, `owner suspect: ${action.message}`);
          return { requeueAfterMs: this.#recheckMs() };
        case 'recovered':
          await this.#transition(live, { type: 'Recovered', message: action.message }, nowMs);
          if (epoch !== undefined) this.#suspectedAt.delete(epochKey(uid, epoch));
          this.metrics.recovery('ownerBack', 'recovered');
          this.#options.logger.info(log, action.message);
          return undefined;
        case 'requeue':
        case 'interrupt':
        case 'fail':
        case 'cancel': {
          const event = fencedEvent(action);
          await this.#transition(live, event, nowMs);
          this.#fenced(uid, epoch, nowMs);
          this.metrics.recovery(action.cause, OUTCOMES[action.type]);
          this.#options.logger.info({ ...log, cause: action.cause, outcome: OUTCOMES[action.type] }, action.message);
          return undefined;
        }
        case 'removeFinalizer':
          await this.#removeFinalizer(live);
          this.metrics.recovery(action.cause, 'finalizerRemoved');
          this.#options.logger.info({ ...log, cause: action.cause }, `registration-cleanup finalizer removed: ${action.message}`);
          return undefined;
      }
    } catch (error) {
      if (error instanceof ApiException && error.code === 409) {
        this.metrics.statusWriteConflicts += 1;
        return { requeueAfterMs: CONFLICT_RETRY_MS };
      }
      if (error instanceof ApiException && error.code === 404) return undefined;
      throw error;
    }
  }

  async #transition(live: Run, event: RunEvent, nowMs: number): Promise<void> {
    const result = transition({ run: live, event, writer: 'stale-recovery', now: new Date(nowMs).toISOString() });
    // decideRecovery chose the event from this very object: a refusal is a bug, not a race.
    if (!result.ok) throw result.error;
    const { name = '', namespace = '' } = live.metadata;
    // The live object's resourceVersion fences the write: a Run changed since it was read gets 409.
    await this.#custom.replaceNamespacedCustomObjectStatus({
      group: API_GROUP,
      version: API_VERSION,
      namespace,
      plural: RUN_PLURAL,
      name,
      body: { ...live, status: result.status },
    });
  }

  /** JSON patch that carries the read resourceVersion: the API server answers 409 if the Run changed since. */
  async #removeFinalizer(live: Run): Promise<void> {
    const { name = '', namespace = '', uid, resourceVersion } = live.metadata;
    const finalizers = (live.metadata.finalizers ?? []).filter((f) => f !== REGISTRATION_CLEANUP_FINALIZER);
    await this.#custom.patchNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION,
      namespace,
      plural: RUN_PLURAL,
      name,
      body: [
        { op: 'test', path: '/metadata/uid', value: uid },
        { op: 'replace', path: '/metadata/resourceVersion', value: resourceVersion },
        { op: 'replace', path: '/metadata/finalizers', value: finalizers },
      ],
    });
  }

  /** What decideFence weighs, from the caches. */
  #evidence(namespace: string, run: ReadonlyDeep<Run>, facts: RunFacts, nowMs: number): OwnerEvidence {
    const epoch = facts.epoch;
    if (epoch === undefined) {
      return { podExists: false, podDeleting: false, podInServiceEndpoints: false, ownerConfirmedRelease: undefined, leaseExpired: false };
    }
    const uid = run.metadata.uid ?? '';
    const pods = this.#pods.list(namespace);
    // The exact UID: a new Pod under the old name is another Pod, and the old one is gone.
    const pod = pods.find((p) => p.metadata?.uid === epoch.podUID);
    let podFacts: PodFacts | undefined;
    if (pod !== undefined) {
      const service = this.#services.get(run.spec.runtime, namespace);
      podFacts = {
        deleting: pod.metadata?.deletionTimestamp !== undefined,
        inServiceEndpoints: service !== undefined && serviceEndpoints(service, pods).some((endpoint) => endpoint.podUID === epoch.podUID),
      };
    }
    const lease = leaseFacts(this.#leases.get(epoch.pod, namespace));
    let stoppedReporting = false;
    const classOfPhase = classify(facts.phase);
    if (
      lease?.report.held !== undefined &&
      leaseState(lease, epoch.podUID, nowMs) === 'fresh' &&
      (classOfPhase === 'executing' || classOfPhase === 'serving')
    ) {
      stoppedReporting = this.#tracker.observe(
        epochKey(uid, epoch),
        lease.renewTimeMs ?? 0,
        includesRef(lease.report.held, uid, epoch.attempt),
        lastChangeMs(run),
      );
    }
    return ownerEvidence({ runUID: uid, epoch, pod: podFacts, lease, nowMs, ownerStoppedReporting: stoppedReporting });
  }

  /** A healthy owned Run is looked at again when its owner's Lease would expire without a renewal. */
  #nextLook(namespace: string, epoch: OwnershipEpoch | undefined, nowMs: number): ReconcileResult | undefined {
    if (epoch === undefined) return undefined;
    const lease = leaseFacts(this.#leases.get(epoch.pod, namespace));
    if (lease === undefined || leaseState(lease, epoch.podUID, nowMs) !== 'fresh') return undefined;
    const expiresMs = (lease.renewTimeMs ?? 0) + (lease.leaseDurationSeconds ?? 0) * 1000;
    return { requeueAfterMs: Math.max(0, expiresMs - nowMs) + 500 };
  }

  #recheckMs(): number {
    return this.#options.recheckMs ?? 10_000;
  }

  #suspected(run: ReadonlyDeep<Run>, epoch: OwnershipEpoch | undefined, nowMs: number): void {
    if (epoch === undefined) return;
    const key = epochKey(run.metadata.uid ?? '', epoch);
    if (!this.#suspectedAt.has(key)) this.#suspectedAt.set(key, nowMs);
  }

  #fenced(uid: string, epoch: OwnershipEpoch | undefined, nowMs: number): void {
    if (epoch === undefined) return;
    const key = epochKey(uid, epoch);
    const since = this.#suspectedAt.get(key);
    this.metrics.fenceWait(since === undefined ? 0 : Math.max(0, nowMs - since) / 1000);
    this.#suspectedAt.delete(key);
    this.#tracker.forget(key);
  }

  #forgetRun(uid: string): void {
    for (const key of [...this.#suspectedAt.keys()]) if (key.startsWith(`${uid}/`)) this.#suspectedAt.delete(key);
    this.#tracker.forgetRun(uid);
  }
}

const OUTCOMES = { requeue: 'requeued', interrupt: 'interrupted', fail: 'failed', cancel: 'cancelled' } as const;

function fencedEvent(action: Extract<RecoveryAction, { type: 'requeue' | 'interrupt' | 'fail' | 'cancel' }>): RunEvent {
  switch (action.type) {
    case 'requeue':
      return { type: 'Requeue', cause: 'ownerLost', backoffSeconds: action.backoffSeconds, message: action.message };
    case 'interrupt':
      return { type: 'Interrupted', reason: action.reason, message: action.message };
    case 'fail':
      return { type: 'Failed', reason: RUN_REASONS.retriesExhausted, message: action.message };
    case 'cancel':
      return { type: 'Cancelled', message: action.message };
  }
}

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
    deleting: plain.metadata.deletionTimestamp !== undefined,
    cleanupFinalizer: plain.metadata.finalizers?.includes(REGISTRATION_CLEANUP_FINALIZER) === true,
    readyReason: findCondition(plain.status?.conditions, CONDITION_TYPES.ready)?.reason,
    epoch: epochOf(plain.status),
  };
}

/** The last time the Run's state visibly changed (the Ready condition flipped, or the claim). */
function lastChangeMs(run: ReadonlyDeep<Run>): number {
  const times = [run.status?.startTime, findCondition((run as Run).status?.conditions, CONDITION_TYPES.ready)?.lastTransitionTime]
    .map((time) => (time === undefined ? Number.NaN : Date.parse(time)))
    .filter((ms) => !Number.isNaN(ms));
  return times.length === 0 ? 0 : Math.max(...times);
}

/** A Lease from the cache: times are Dates after a list and strings after a watch event. */
function leaseFacts(lease: ReadonlyDeep<V1Lease> | undefined): LeaseFacts | undefined {
  if (lease === undefined) return undefined;
  return {
    holderIdentity: lease.spec?.holderIdentity,
    renewTimeMs: timeMs(lease.spec?.renewTime),
    leaseDurationSeconds: lease.spec?.leaseDurationSeconds,
    report: readLeaseReport(lease.metadata?.annotations),
  };
}

function timeMs(value: unknown): number | undefined {
  if (value instanceof Date) return value.getTime();
  if (typeof value === 'string') {
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? undefined : ms;
  }
  return undefined;
}
