import type { KubeConfig } from '@kubernetes/client-node';
import { RUN_REASONS } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { Controller, ControllerGroup, asReconciler, objectKey, systemMonotonicClock } from '@kruntimes/controller-runtime';
import type {
  ControllerLogger,
  InformerFactory,
  MonotonicClock,
  ObjectReconciler,
  ObjectRef,
  ReadonlyDeep,
  ReconcileResult,
} from '@kruntimes/controller-runtime';
import type { OwnershipEpoch } from '@kruntimes/fencing';
import type { Refused, WriteResult } from '@kruntimes/run-client';
import { resolveAutomaticRetryPolicy } from '@kruntimes/run-state';
import type { RunEvent } from '@kruntimes/run-state';
import { decideRecovery } from './decide.ts';
import type { RecoveryAction, RecoveryEvidence, RunFacts } from './decide.ts';
import { leaseExpiresAtMs, leaseState } from './evidence.ts';
import { gatherEvidence, ownerLease } from './gather-evidence.ts';
import { LeaseObservations, observeLeases } from './lease-observations.ts';
import { RecoveryMetrics } from './metrics.ts';
import { recoveryCaches, routeToRuns } from './recovery-caches.ts';
import type { RecoveryCaches } from './recovery-caches.ts';
import { ReportingTracker } from './reporting-tracker.ts';
import { epochKey, runFacts } from './run-facts.ts';
import { RunWrites } from './run-writes.ts';

export interface StaleRecoveryOptions {
  kubeConfig: KubeConfig;
  /** The Manager's shared informers, which it starts first and stops last; default: this one's own, started and stopped with it. */
  informers?: InformerFactory;
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
  /**
   * The cluster default of the retry policy (`--automatic-retry`, chart value
   * `retry.automatic`): whether a retrySafe task that lost its owner is retried
   * automatically; a namespace annotation can only narrow it. Default true.
   */
  automaticRetry?: boolean;
  /** Milliseconds since the epoch, for the times written on Runs; injectable for tests. */
  now?: () => number;
  /**
   * Times when this process saw each Pod Lease change, and judges its expiry by (never the
   * renewTime the Pod wrote); injectable for tests. Default: the system's monotonic clock.
   */
  clock?: MonotonicClock;
}

/** Look again this soon after a write lost a race (409) or the cache lagged the live Run. */
const CONFLICT_RETRY_MS = 200;
type LogFields = Record<string, unknown>;

/**
 * Detects lost owners of Runs and recovers them (docs/lifecycle.md and "How recovery works" in docs/operations.md). The unit of
 * work is a Run key. Each reconcile gathers the evidence about the Run's owner from the
 * caches (the exact Pod UID, its deletion, its place in the Service endpoints, its Lease
 * and what that Lease reports), lets `decideRecovery` choose one action, and performs it
 * as one write: re-read the live Run, re-check its epoch, decide again on it, and write
 * with its resourceVersion (409: look again). A suspect owner only makes the Run
 * Ready=False Recovering; a new attempt starts only after the fence. Run this only while
 * holding the leader Lease.
 */
export class StaleRecovery implements ObjectReconciler<Run> {
  readonly metrics: RecoveryMetrics;
  readonly #options: StaleRecoveryOptions;
  readonly #writes: RunWrites;
  readonly #group: ControllerGroup;
  readonly #caches: RecoveryCaches;
  readonly #controller: Controller;
  readonly #tracker: ReportingTracker;
  readonly #now: () => number;
  readonly #clock: MonotonicClock;
  readonly #leaseObservations: LeaseObservations;
  /** `uid/attempt` -> when that epoch was first suspected (for the fence-wait histogram). */
  readonly #suspectedAt = new Map<string, number>();
  #resyncTimer: NodeJS.Timeout | undefined;

  constructor(options: StaleRecoveryOptions) {
    this.#options = options;
    this.metrics = options.metrics ?? new RecoveryMetrics();
    this.#now = options.now ?? Date.now;
    const clock = options.clock ?? systemMonotonicClock;
    this.#clock = clock;
    this.#leaseObservations = new LeaseObservations({ now: () => clock.now() });
    this.#tracker = new ReportingTracker(options.reportingGrace);
    const { kubeConfig, namespace, logger } = options;
    this.#writes = new RunWrites(kubeConfig);
    this.#group = new ControllerGroup({ kubeConfig, logger, informers: options.informers });
    this.#caches = recoveryCaches(this.#group.informers, namespace);
    // Before routeToRuns: a Lease's new version is seen before the Runs it concerns are enqueued.
    observeLeases(this.#caches.leases, this.#leaseObservations);
    // A Run being deleted still has its registration-cleanup finalizer to see to.
    const reconcile = asReconciler(this.#caches.runs, this, { deleting: 'reconcile' });
    this.#controller = new Controller({ name: 'stale-recovery', logger, workers: options.workers ?? 2, reconcile });
    this.#group.add(this.#controller);
    routeToRuns(this.#caches, {
      enqueue: (key) => {
        this.#controller.enqueue(key);
      },
      forget: (uid) => {
        this.#forgetRun(uid);
      },
    });
  }

  /** Fills every cache (shared ones are synced already), then starts reconciling: the first decision sees complete caches. */
  async start(): Promise<void> {
    await this.#group.start();
    const resyncMs = this.#options.resyncMs ?? 300_000;
    if (resyncMs > 0) {
      this.#resyncTimer = setInterval(() => {
        for (const run of this.#caches.runs.list(this.#options.namespace)) this.#controller.enqueue(objectKey(run));
      }, resyncMs);
      this.#resyncTimer.unref();
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.#resyncTimer);
    await this.#group.stop();
  }

  /** One look at one Run: gather the evidence, decide, and act when there is something to do. */
  async reconcile(run: ReadonlyDeep<Run>, { namespace, name }: ObjectRef): Promise<ReconcileResult | undefined> {
    const facts = runFacts(run);
    if (facts.epoch === undefined && !(facts.deleting && facts.cleanupFinalizer)) return undefined;
    const nowMs = this.#now();
    const action = decideRecovery(facts, this.#evidence(namespace, run, facts));
    switch (action.type) {
      case 'none':
        return this.#nextLook(namespace, facts.epoch);
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
   * its resourceVersion. A Conflict or a live Run that moved on means: look again shortly.
   */
  async #act(namespace: string, name: string, uid: string): Promise<ReconcileResult | undefined> {
    const live = await this.#writes.live(namespace, name);
    if (live?.metadata.uid !== uid) return undefined;
    const facts = runFacts(live);
    const nowMs = this.#now();
    const evidence = this.#evidence(namespace, live, facts);
    let action = decideRecovery(facts, evidence);
    if (action.type === 'requeue' && facts.mode === 'task') {
      // The organisation's policy can only turn a requeue into Interrupted: looked up then.
      facts.automaticRetry = resolveAutomaticRetryPolicy({
        clusterAllows: this.#options.automaticRetry ?? true,
        namespace,
        annotations: await this.#writes.namespaceAnnotations(namespace),
      });
      action = decideRecovery(facts, evidence);
    }
    const epoch = facts.epoch;
    const log = { run: `${namespace}/${name}`, runUID: uid, attempt: epoch?.attempt, pod: epoch?.pod, podUID: epoch?.podUID };
    return this.#perform(live, action, { uid, namespace, epoch, nowMs, log });
  }

  /** A write refused because the Run changed (look again shortly) or is gone (nothing to do). */
  #notWritten(refused: Refused<'NotFound' | 'Conflict'>): ReconcileResult | undefined {
    switch (refused.reason) {
      case 'Conflict':
        this.metrics.statusWriteConflicts += 1;
        return { requeueAfterMs: CONFLICT_RETRY_MS };
      case 'NotFound':
        return undefined;
    }
  }

  /** Performs the action decided on the live Run, each write fenced on its resourceVersion. */
  async #perform(
    live: Run,
    action: RecoveryAction,
    at: { uid: string; namespace: string; epoch: OwnershipEpoch | undefined; nowMs: number; log: LogFields },
  ): Promise<ReconcileResult | undefined> {
    const { uid, namespace, epoch, nowMs, log } = at;
    const logger = this.#options.logger;
    let written: WriteResult<Run>;
    switch (action.type) {
      case 'none':
        return this.#nextLook(namespace, epoch);
      case 'wait':
        this.#suspected(live, epoch, nowMs);
        return { requeueAfterMs: this.#recheckMs() };
      case 'markRecovering':
        this.#suspected(live, epoch, nowMs);
        written = await this.#writes.transition(live, { type: 'MarkRecovering', message: action.message }, nowMs);
        if (!written.ok) return this.#notWritten(written);
        this.metrics.recovery(action.cause, 'markedRecovering');
        logger.info({ ...log, cause: action.cause }, `owner suspect: ${action.message}`);
        return { requeueAfterMs: this.#recheckMs() };
      case 'recovered':
        written = await this.#writes.transition(live, { type: 'Recovered', message: action.message }, nowMs);
        if (!written.ok) return this.#notWritten(written);
        if (epoch !== undefined) this.#suspectedAt.delete(epochKey(uid, epoch));
        this.metrics.recovery('ownerBack', 'recovered');
        logger.info(log, action.message);
        return undefined;
      case 'requeue':
      case 'interrupt':
      case 'fail':
      case 'cancel':
        written = await this.#writes.transition(live, fencedEvent(action), nowMs);
        if (!written.ok) return this.#notWritten(written);
        this.#fenced(uid, epoch, nowMs);
        this.metrics.recovery(action.cause, OUTCOMES[action.type]);
        logger.info({ ...log, cause: action.cause, outcome: OUTCOMES[action.type] }, action.message);
        return undefined;
      case 'removeFinalizer':
        written = await this.#writes.removeFinalizer(live);
        if (!written.ok) return this.#notWritten(written);
        this.metrics.recovery(action.cause, 'finalizerRemoved');
        logger.info({ ...log, cause: action.cause }, `registration-cleanup finalizer removed: ${action.message}`);
        return undefined;
    }
  }

  /** The evidence now; a Lease's expiry is judged on the monotonic clock. */
  #evidence(namespace: string, run: ReadonlyDeep<Run>, facts: RunFacts): RecoveryEvidence {
    const sources = { caches: this.#caches, observations: this.#leaseObservations };
    return gatherEvidence(sources, this.#tracker, { namespace, run, facts, nowMs: this.#clock.now(), wallNowMs: this.#now() });
  }

  /** A healthy owned Run is looked at again when its owner's Lease would expire without a change. */
  #nextLook(namespace: string, epoch: OwnershipEpoch | undefined): ReconcileResult | undefined {
    if (epoch === undefined) return undefined;
    const lease = ownerLease({ caches: this.#caches, observations: this.#leaseObservations }, namespace, epoch);
    const nowMs = this.#clock.now();
    if (lease === undefined || leaseState(lease, epoch.podUID, nowMs) !== 'fresh') return undefined;
    return { requeueAfterMs: Math.max(0, leaseExpiresAtMs(lease) - nowMs) + 500 };
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
