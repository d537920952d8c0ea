import { RUN_REASONS } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import type {
  ManagerLogger,
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
import type { EvidenceCaches } from './gather-evidence.ts';
import type { LeaseObservations } from './lease-observations.ts';
import type { RecoveryMetrics } from './metrics.ts';
import { ReportingTracker } from './reporting-tracker.ts';
import { epochKey, runFacts } from './run-facts.ts';
import type { RunWrites } from './run-writes.ts';

export interface RecoveryReconcilerOptions {
  /** The Pods, Services and Pod Leases the evidence is read from. */
  caches: EvidenceCaches;
  /** When this process saw each Pod Lease change (fed from the Lease informer). */
  observations: LeaseObservations;
  writes: RunWrites;
  logger: ManagerLogger;
  metrics: RecoveryMetrics;
  /** Milliseconds since the epoch, for the times written on Runs. */
  now: () => number;
  /** The clock of `observations`, by which a Lease's expiry is judged. */
  clock: MonotonicClock;
  /** See StaleRecoveryOptions. */
  recheckMs?: number | undefined;
  reportingGrace?: { renewals?: number; minGraceMs?: number } | undefined;
  automaticRetry?: boolean | undefined;
}

/** Look again this soon after a write lost a race (409) or the cache lagged the live Run. */
const CONFLICT_RETRY_MS = 200;
type LogFields = Record<string, unknown>;

/**
 * The reconciler of the `stale-recovery` controller (key `namespace/run`, handed the
 * cached Run, deleting ones included): gathers the evidence about the Run's owner from the
 * caches, lets `decideRecovery` choose one action, and performs it as one write on the
 * live Run (StaleRecovery describes the whole). The decisions are decideRecovery's; this
 * class reads the caches and writes.
 */
export class RecoveryReconciler implements ObjectReconciler<Run> {
  readonly #options: RecoveryReconcilerOptions;
  readonly #tracker: ReportingTracker;
  /** `uid/attempt` -> when that epoch was first suspected (for the fence-wait histogram). */
  readonly #suspectedAt = new Map<string, number>();

  constructor(options: RecoveryReconcilerOptions) {
    this.#options = options;
    this.#tracker = new ReportingTracker(options.reportingGrace);
  }

  /** A deleted Run: what was remembered about its epochs is dropped. */
  forgetRun(uid: string): void {
    for (const key of [...this.#suspectedAt.keys()]) if (key.startsWith(`${uid}/`)) this.#suspectedAt.delete(key);
    this.#tracker.forgetRun(uid);
  }

  /** One look at one Run: gather the evidence, decide, and act when there is something to do. */
  async reconcile(run: ReadonlyDeep<Run>, { namespace, name }: ObjectRef): Promise<ReconcileResult | undefined> {
    const facts = runFacts(run);
    if (facts.epoch === undefined && !(facts.deleting && facts.cleanupFinalizer)) return undefined;
    const nowMs = this.#options.now();
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
    const live = await this.#options.writes.live(namespace, name);
    if (live?.metadata.uid !== uid) return undefined;
    const facts = runFacts(live);
    const nowMs = this.#options.now();
    const evidence = this.#evidence(namespace, live, facts);
    let action = decideRecovery(facts, evidence);
    if (action.type === 'requeue' && facts.mode === 'task') {
      // The organisation's policy can only turn a requeue into Interrupted: looked up then.
      facts.automaticRetry = resolveAutomaticRetryPolicy({
        clusterAllows: this.#options.automaticRetry ?? true,
        namespace,
        annotations: await this.#options.writes.namespaceAnnotations(namespace),
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
        this.#options.metrics.statusWriteConflicts += 1;
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
        written = await this.#options.writes.transition(live, { type: 'MarkRecovering', message: action.message }, nowMs);
        if (!written.ok) return this.#notWritten(written);
        this.#options.metrics.recovery(action.cause, 'markedRecovering');
        logger.info({ ...log, cause: action.cause }, `owner suspect: ${action.message}`);
        return { requeueAfterMs: this.#recheckMs() };
      case 'recovered':
        written = await this.#options.writes.transition(live, { type: 'Recovered', message: action.message }, nowMs);
        if (!written.ok) return this.#notWritten(written);
        if (epoch !== undefined) this.#suspectedAt.delete(epochKey(uid, epoch));
        this.#options.metrics.recovery('ownerBack', 'recovered');
        logger.info(log, action.message);
        return undefined;
      case 'requeue':
      case 'interrupt':
      case 'fail':
      case 'cancel':
        written = await this.#options.writes.transition(live, fencedEvent(action), nowMs);
        if (!written.ok) return this.#notWritten(written);
        this.#fenced(uid, epoch, nowMs);
        this.#options.metrics.recovery(action.cause, OUTCOMES[action.type]);
        logger.info({ ...log, cause: action.cause, outcome: OUTCOMES[action.type] }, action.message);
        return undefined;
      case 'removeFinalizer':
        written = await this.#options.writes.removeFinalizer(live);
        if (!written.ok) return this.#notWritten(written);
        this.#options.metrics.recovery(action.cause, 'finalizerRemoved');
        logger.info({ ...log, cause: action.cause }, `registration-cleanup finalizer removed: ${action.message}`);
        return undefined;
    }
  }

  /** The evidence now; a Lease's expiry is judged on the monotonic clock. */
  #evidence(namespace: string, run: ReadonlyDeep<Run>, facts: RunFacts): RecoveryEvidence {
    const sources = { caches: this.#options.caches, observations: this.#options.observations };
    return gatherEvidence(sources, this.#tracker, {
      namespace,
      run,
      facts,
      nowMs: this.#options.clock.now(),
      wallNowMs: this.#options.now(),
    });
  }

  /** A healthy owned Run is looked at again when its owner's Lease would expire without a change. */
  #nextLook(namespace: string, epoch: OwnershipEpoch | undefined): ReconcileResult | undefined {
    if (epoch === undefined) return undefined;
    const lease = ownerLease({ caches: this.#options.caches, observations: this.#options.observations }, namespace, epoch);
    const nowMs = this.#options.clock.now();
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
    this.#options.metrics.fenceWait(since === undefined ? 0 : Math.max(0, nowMs - since) / 1000);
    this.#suspectedAt.delete(key);
    this.#tracker.forget(key);
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
