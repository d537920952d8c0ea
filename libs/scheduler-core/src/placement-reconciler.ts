import { setImmediate as nextTurn } from 'node:timers/promises';
import type { V1Pod, V1ReplicaSet } from '@kubernetes/client-node';
import { API_GROUP_VERSION, DEFAULTS, LABELS, RUN_KIND, RUN_REASONS } from '@kruntimes/api';
import type { Run, Runtime } from '@kruntimes/api';
import { objectKey, splitObjectKey } from '@kruntimes/controller-runtime';
import type { ControllerLogger, EventRecorder, ReadonlyDeep, ReconcileResult } from '@kruntimes/controller-runtime';
import type { RuntimeUseReviewer } from '@kruntimes/authz';
import { forEachLimited } from '@kruntimes/host';
import { isDefiniteRefusal, writeTransition } from '@kruntimes/run-client';
import type { FencedResult, RunStatusWriter } from '@kruntimes/run-client';
import { classify } from '@kruntimes/run-state';
import type { RunEvent, TransitionRefusedError } from '@kruntimes/run-state';
import { decideAdmission, decideBlockPolicy } from './admission-gate.ts';
import type { AdmissionVerdict, CreatorAccess } from './admission-gate.ts';
import type { AssumeCache } from './assume-cache.ts';
import type { SchedulerMetrics } from './metrics.ts';
import { planPlacement, roomFor } from './placement.ts';
import type { Decision, Plan, PodInfo, RunInfo } from './placement.ts';
import { currentTemplateHash, podInfo, rfc3339, runInfo, scalingFacts } from './placement-input.ts';
import { RunBook, creatorKey, passSignature } from './run-book.ts';
import type { RunCreator } from './run-book.ts';
import { heldRunSlots, runSlotCap } from './run-slot-cap.ts';
import type { NamespaceSlots, RunSlotCap } from './run-slot-cap.ts';
import { SerialByKey } from './serial-by-key.ts';
import { RUN_INDEXES, placedPending } from './scheduler-caches.ts';
import type { SchedulerReads } from './scheduler-caches.ts';

/** Where a Runtime is looked at again: the scheduler's work queue. */
export interface RuntimeQueue {
  enqueue(key: string): void;
  /** Again after the queue's backoff for the key (a failed write). */
  enqueueRateLimited(key: string): void;
}

export interface PlacementReconcilerOptions {
  caches: SchedulerReads;
  runs: RunStatusWriter;
  /** Records the admission gate's refusals as Events on their Runs. */
  events: Pick<EventRecorder, 'event'>;
  /** See SchedulerOptions.runtimeUse. */
  runtimeUse: Pick<RuntimeUseReviewer, 'review'>;
  /** The binds written and not yet seen by the watch (fed from the Run cache's events). */
  assume: AssumeCache;
  queue: RuntimeQueue;
  logger: ControllerLogger;
  metrics: SchedulerMetrics;
  /** Milliseconds since the epoch. */
  now: () => number;
  /** See SchedulerOptions. */
  bindConcurrency: number;
  uncertainBindTtlMs: number;
  accessRecheckMs: number;
}

/** Runs converted for placement between two turns of the event loop: a pass over many Runs lets lease renewals and watch events in. */
const RUNS_PER_TURN = 500;

/** One pass's plan and what its writes and its next look need. */
interface Pass {
  plan: Plan;
  /** The Runs it planned, by UID. */
  runs: Map<string, ReadonlyDeep<Run>>;
  /** The review of each recorded creator of its Runs (creatorKey -> access). */
  access: Map<string, CreatorAccess>;
  /** The pass's instant, in whole seconds. */
  nowMs: number;
  /** When the earliest uncertain bind expires. */
  nextExpiryMs: number | undefined;
  /** The settled Runs it did not plan (they wait as they did), and how many per reason. */
  unplanned: { runs: number; byReason: ReadonlyMap<string, number> };
}

/**
 * The reconciler of the scheduler (key `namespace/runtimeName`, see Scheduler): plans a
 * Runtime's Pending Runs from the caches with planPlacement and writes the decisions. The
 * decisions are placement's; this class reads the caches, reviews the Runs' creators and writes.
 */
export class PlacementReconciler {
  readonly #options: PlacementReconcilerOptions;
  /**
   * The passes of a namespace with a run-slot cap, one at a time: the cap spans its
   * Runtimes, which the work queue would otherwise place at once, each counting the
   * slots held before the other's binds. A pass waits for the writes of the one before,
   * so a write that hangs holds up the namespace's other Runtimes too, as it does its own.
   */
  readonly #cappedNamespaces = new SerialByKey();
  /** Per Runtime key, the Runs whose waiting reason is being written beside the passes (see WAIT_WRITES_PER_PASS). */
  readonly #waitWrites = new Map<string, Set<string>>();
  /** Those writes, for stop() to wait on. */
  readonly #waitWritesRunning = new Set<Promise<void>>();
  /**
   * Waiting reasons written whose Run the cache still shows at the version they were fenced on (UID -> that
   * version): still in #waitWrites, so that no pass plans the Run from the version before its write (a 409).
   */
  readonly #waitWritten = new Map<string, { key: string; fencedOn: string | undefined }>();
  /** Each Runtime's Pending Runs as its last pass left them: a pass plans only those that can change (see RunBook). */
  readonly #book = new RunBook();

  constructor(options: PlacementReconcilerOptions) {
    this.#options = options;
  }

  /** The waiting reasons still being written (stop waits for them before the caches stop). */
  waitWritesSettled(): Promise<unknown> {
    return Promise.all([...this.#waitWritesRunning]);
  }

  /** Every Run event, before its Runtime is enqueued; a waiting reason written on an earlier version is out of flight. */
  runObserved(key: string, run: ReadonlyDeep<Run>, deleted: boolean): void {
    if (deleted) this.#book.deleted(key, run);
    else this.#book.changed(key, run);
    const uid = run.metadata.uid ?? '';
    const written = this.#waitWritten.get(uid);
    if (written === undefined || (!deleted && run.metadata.resourceVersion === written.fencedOn)) return;
    this.#waitWritten.delete(uid);
    this.#waitWriteDone(written.key, uid);
  }

  /** One placement pass over a Runtime's Pending Runs. */
  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const started = performance.now();
    try {
      return await this.#reconcile(key);
    } finally {
      this.#options.metrics.passDuration.observe((performance.now() - started) / 1000);
    }
  }

  async #reconcile(key: string): Promise<ReconcileResult | undefined> {
    const { namespace = '' } = splitObjectKey(key);
    const capped = namespaceSlotCap(this.#options.caches, namespace).kind !== 'none';
    const pass = capped ? await this.#cappedNamespaces.run(namespace, () => this.#planAndApply(key)) : await this.#planAndApply(key);
    // Look again when a backoff ends or an uncertain bind expires; otherwise only events wake this Runtime.
    const { plan, nowMs, nextExpiryMs, access } = pass;
    // A right granted again is no event the scheduler sees: a Run refused for it is looked at again.
    const refusedAccess = [...access.values()].some((a) => a.kind === 'denied' || a.kind === 'unknown');
    // Waiting reasons this pass left: each answered write enqueues the Runtime again (#writeWaits), no wakeup needed.
    const wakeups = [
      plan.retryAtMs === undefined ? undefined : plan.retryAtMs - nowMs + 1000,
      nextExpiryMs === undefined ? undefined : nextExpiryMs - this.#options.now() + 1,
      refusedAccess ? this.#options.accessRecheckMs : undefined,
    ].filter((ms) => ms !== undefined);
    return wakeups.length === 0 ? undefined : { requeueAfterMs: Math.max(0, Math.min(...wakeups)) };
  }

  /**
   * Asks, for each creator recorded on a Run that could be bound now (Pending, not cancelled,
   * not in backoff, the Runtime there and not blocked) or on a settled Run, whether they may
   * still `use` the Runtime: one cached review per creator, however many Runs they made. A
   * Run without a recorded creator (created before the admission policy) is `unrecorded`:
   * nobody to ask, it binds as before.
   */
  async #reviewCreators(
    key: string,
    runtime: ReadonlyDeep<Runtime> | undefined,
    runs: readonly ReadonlyDeep<Run>[],
    settledCreators: readonly ReadonlyDeep<RunCreator>[],
    nowMs: number,
  ): Promise<Map<string, CreatorAccess>> {
    const { namespace = '', name } = splitObjectKey(key);
    const access = new Map<string, CreatorAccess>();
    if (runtime === undefined || runtime.metadata.deletionTimestamp !== undefined) return access;
    if (blockReason(this.#options.caches, namespace, name, runtime) !== undefined) return access;
    const creators = new Map(settledCreators.map((creator) => [creatorKey(creator), creator]));
    for (const run of runs) {
      const creator = run.spec.creator;
      if (
        creator === undefined ||
        !placedPending(run) ||
        run.spec.cancelRequested === true ||
        (run.status?.notBefore !== undefined && Date.parse(run.status.notBefore) > nowMs)
      )
        continue;
      creators.set(creatorKey(creator), creator);
    }
    await Promise.all(
      [...creators].map(async ([id, creator]) => {
        access.set(id, await this.#creatorAccess(creator, namespace, name));
      }),
    );
    return access;
  }

  async #creatorAccess(creator: ReadonlyDeep<RunCreator>, namespace: string, runtime: string): Promise<CreatorAccess> {
    try {
      const answer = await this.#options.runtimeUse.review({
        username: creator.username,
        groups: creator.groups ?? [],
        namespace,
        runtime,
      });
      return answer.decision === 'allowed' ? { kind: 'allowed' } : { kind: 'denied', user: creator.username, reason: answer.reason };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.#options.logger.debug(
        { creator: creator.username, runtime: `${namespace}/${runtime}`, err: error },
        'could not review a creator of Runs',
      );
      return { kind: 'unknown', user: creator.username, error: message };
    }
  }

  /** Plans, then writes every decision (bound ones assumed before their write, for the next pass). */
  async #planAndApply(key: string): Promise<Pass> {
    const pass = await this.#plan(key);
    this.#options.metrics.passes += 1;
    // The settled Runs it did not plan wait as they did: counted, not looked at. Not the Runs
    // this pass settled: the plan counted those already.
    const settled = pass.unplanned;
    const settledWith = (reason: string): number => settled.byReason.get(reason) ?? 0;
    this.#options.metrics.pendingByRuntime.set(key, pass.plan.unbound + settled.runs);
    this.#options.metrics.setWaitingForCapacity(key, pass.plan.waitingForCapacity + settledWith(RUN_REASONS.waitingForCapacity));
    this.#options.metrics.setWaitingForSlotCap(key, pass.plan.waitingForSlotCap + settledWith(RUN_REASONS.runSlotCapReached));
    await this.#applyAll(key, pass);
    return pass;
  }

  /** The namespace's run-slot cap and the slots all its Runs hold (visible or assumed); undefined without a cap. */
  #namespaceSlots(namespace: string): NamespaceSlots | undefined {
    const cap = namespaceSlotCap(this.#options.caches, namespace);
    if (cap.kind === 'none') return undefined;
    const holding = this.#options.caches.runs.byIndex(RUN_INDEXES.holdingByNamespace, namespace).map((run) => run.metadata.uid ?? '');
    return { namespace, cap, held: heldRunSlots(holding, this.#options.assume.inNamespace(namespace)) };
  }

  /**
   * Plans a Runtime's Runs against its Pods, from the caches and the binds assumed so far: the
   * Runs its RunBook has open (changed, or not settled by the last pass), the oldest settled
   * ones that the room there is now could bind, and the Runs holding its Pods' slots. When the
   * Runtime's facts differ from those its settled Runs were settled under, every Pending Run.
   */
  async #plan(key: string): Promise<Pass> {
    const { namespace = '', name } = splitObjectKey(key);
    const runtime = this.#options.caches.runtimes.get(name, namespace);
    const holding = this.#options.caches.runs.byIndex(RUN_INDEXES.holdingByRuntime, key);
    const pods = runtimePods(this.#options.caches, namespace, name);
    // Whole seconds: the state machine compares notBefore with the RFC 3339 `now` it
    // writes, so the plan must use the very same instant.
    const nowMs = Math.floor(this.#options.now() / 1000) * 1000;
    const namespaceSlots = this.#namespaceSlots(namespace);
    const facts = {
      runtimeExists: runtime !== undefined && runtime.metadata.deletionTimestamp === undefined,
      runsPerPod: runtime?.spec.runs ?? DEFAULTS.runsPerPod,
      pods,
      scaling: scalingFacts(runtime),
      namespaceSlots,
      waitWritesInFlight: this.#waitWrites.get(key) ?? new Set<string>(),
      nowMs,
    };
    const planOf = async (pending: readonly ReadonlyDeep<Run>[]) => {
      const runs = new Map<string, ReadonlyDeep<Run>>();
      for (const run of [...holding, ...pending]) runs.set(run.metadata.uid ?? '', run);
      const infos = await runInfos(runs.values());
      const assumptions = this.#options.assume.snapshot(key, (uid) => runs.get(uid)?.metadata.resourceVersion, this.#options.now());
      const access = await this.#reviewCreators(key, runtime, pending, this.#book.settledCreators(key), nowMs);
      const plan = planPlacement({
        ...facts,
        runs: infos,
        assumed: assumptions.assumed,
        admission: admissionVerdicts(this.#options.caches, { namespace, name, runtime }, infos, runs, access),
      });
      const signature = passSignature({
        runtimeExists: facts.runtimeExists,
        blocked: blockReason(this.#options.caches, namespace, name, runtime),
        access,
        tail: plan.tail,
      });
      return { plan, runs, access, signature, nextExpiryMs: assumptions.nextExpiryMs };
    };
    let pass: Awaited<ReturnType<typeof planOf>> | undefined;
    if (this.#book.signature(key) !== undefined) {
      // The room there is now, counted as the plan counts it (the assumed binds need the versions of open Runs).
      const open = new Map(this.#book.open(key).map((run) => [run.metadata.uid ?? '', run]));
      const versions = new Map([...holding, ...open.values()].map((run) => [run.metadata.uid ?? '', run.metadata.resourceVersion]));
      const assumed = this.#options.assume.snapshot(key, (uid) => versions.get(uid), this.#options.now()).assumed;
      const room = roomFor({ ...facts, runs: holding.map(runInfo), assumed });
      this.#book.openOldestWaitingForRoom(key, room);
      pass = await planOf(this.#book.open(key));
      if (pass.signature !== this.#book.signature(key)) pass = undefined;
    }
    if (pass === undefined) {
      this.#book.unsettleAll(key);
      pass = await planOf(this.#options.caches.runs.byIndex(RUN_INDEXES.pendingByRuntime, key));
    }
    // Before record(): what stays settled now is exactly what this pass did not plan.
    const { runs: unplannedRuns, byReason } = this.#book.settledCounts(key);
    const unplanned = { runs: unplannedRuns, byReason: new Map(byReason) };
    this.#book.record(key, pass.signature, pass.runs.values(), pass.plan.settled, placedPending);
    return { plan: pass.plan, runs: pass.runs, access: pass.access, nowMs, nextExpiryMs: pass.nextExpiryMs, unplanned };
  }

  /**
   * Writes every bind and cancel, a bounded number at once; any failures fail the pass together. The waiting reasons
   * are written beside the pass (#writeWaits): the next pass, and its binds, need not wait for them.
   */
  async #applyAll(key: string, { plan, runs, nowMs }: Pass): Promise<void> {
    const now = rfc3339(nowMs);
    const failures: unknown[] = [];
    this.#writeWaits(
      key,
      plan.decisions.filter((decision) => decision.action === 'unschedulable'),
      runs,
      now,
    );
    const changes = plan.decisions.filter((decision) => decision.action !== 'unschedulable');
    await forEachLimited(changes, this.#options.bindConcurrency, async (decision) => {
      const run = runs.get(decision.run.uid);
      if (run === undefined) return;
      try {
        await this.#apply(key, run, decision, now);
      } catch (error) {
        failures.push(error);
      }
    });
    if (failures.length > 0) {
      throw new AggregateError(failures, `${failures.length} of ${changes.length} writes for Runtime ${key} failed`);
    }
  }

  /**
   * The waiting reasons of a pass, each written fenced like any decision but not awaited by the pass; the Runs stay in
   * #waitWrites (so no pass plans them again) until answered. Each answer enqueues the Runtime again, which writes
   * what was left; a failure is retried with the queue's backoff.
   */
  #writeWaits(key: string, decisions: readonly Decision[], runs: ReadonlyMap<string, ReadonlyDeep<Run>>, now: string): void {
    if (decisions.length === 0) return;
    const inFlight = this.#waitWrites.get(key) ?? new Set<string>();
    this.#waitWrites.set(key, inFlight);
    for (const decision of decisions) {
      const run = runs.get(decision.run.uid);
      if (run === undefined) continue;
      inFlight.add(decision.run.uid);
      const write = (async (): Promise<void> => {
        let failed = false;
        let written = false;
        try {
          written = await this.#apply(key, run, decision, now);
        } catch (error) {
          failed = true;
          this.#options.logger.error({ runtime: key, run: objectKey(run), err: error }, 'could not write why a Run waits; retried');
        }
        const uid = decision.run.uid;
        const fencedOn = run.metadata.resourceVersion;
        // Written: in flight until the cache shows a version after the one it was fenced on (#waitWriteSeen), whose
        // event enqueues the Runtime; a pass before that would plan the Run from the version before the write.
        if (
          written &&
          this.#options.caches.runs.get(run.metadata.name ?? '', run.metadata.namespace)?.metadata.resourceVersion === fencedOn
        ) {
          this.#waitWritten.set(uid, { key, fencedOn });
          return;
        }
        // Out of flight before the Runtime is looked at again, so that the next pass may plan it.
        this.#waitWriteDone(key, uid);
        if (failed) this.#options.queue.enqueueRateLimited(key);
        else this.#options.queue.enqueue(key);
      })();
      void write.finally(() => this.#waitWritesRunning.delete(write));
      this.#waitWritesRunning.add(write);
    }
  }

  #waitWriteDone(key: string, uid: string): void {
    const inFlight = this.#waitWrites.get(key);
    inFlight?.delete(uid);
    if (inFlight?.size === 0) this.#waitWrites.delete(key);
  }

  /** Writes the decision (see #write); true when it was written. */
  async #apply(key: string, run: ReadonlyDeep<Run>, decision: Decision, now: string): Promise<boolean> {
    const sentAt = await this.#write(key, run, decision, now);
    if (sentAt === undefined) return false;
    if (decision.action === 'unschedulable' && ADMISSION_REASONS.has(decision.reason)) await this.#recordRefusal(run, decision);
    if (decision.action === 'bind') {
      this.#options.metrics.binds += 1;
      this.#options.metrics.bindWrite.observe((performance.now() - sentAt) / 1000);
      const created = Date.parse(run.metadata.creationTimestamp ?? '');
      if (!Number.isNaN(created)) this.#options.metrics.bindLatency.observe(Math.max(0, Date.now() - created) / 1000);
    }
    return true;
  }

  /**
   * The decision's transition, written fenced on the cached Run's resourceVersion (no
   * retry: the Run's watch event enqueues its Runtime again), and what its outcome means
   * for the assumed bind. Returns when the write was sent; undefined when it was not
   * written, because the state machine refused it or the Run changed or is gone, which its
   * watch event answers: not a failure of the pass.
   */
  async #write(key: string, run: ReadonlyDeep<Run>, decision: Decision, now: string): Promise<number | undefined> {
    const uid = run.metadata.uid ?? '';
    let sentAt = performance.now();
    let result: FencedResult<Run, TransitionRefusedError>;
    try {
      result = await writeTransition(this.#options.runs, run, decisionEvent(decision), {
        writer: 'scheduler',
        now: () => now,
        beforeWrite: () => {
          if (decision.action === 'bind') this.#options.assume.assume(key, uid, decision.pod.uid, run.metadata.resourceVersion ?? '');
          sentAt = performance.now();
        },
      });
    } catch (error) {
      // A definite refusal: the write did not happen, so neither did the bind.
      if (isDefiniteRefusal(error)) this.#options.assume.forget(uid);
      // Outcome unknown: the bind may have landed. Keep counting it, for a bounded time.
      else if (decision.action === 'bind') this.#options.assume.uncertain(uid, this.#options.now() + this.#options.uncertainBindTtlMs);
      throw error;
    }
    if (result.ok) return sentAt;
    switch (result.reason) {
      case 'Refused':
        // The plan was made from this very object, so a refusal is a bug in the plan.
        // Retrying cannot help; the Run's next change enqueues its Runtime again.
        this.#options.logger.error(
          { run: objectKey(run), err: result.error, action: decision.action },
          'the state machine refused the planned write',
        );
        return undefined;
      case 'Conflict':
        this.#options.assume.forget(uid);
        if (decision.action === 'bind') this.#options.metrics.bindConflicts += 1;
        return undefined;
      case 'NotFound':
        this.#options.assume.forget(uid);
        return undefined;
    }
  }

  /**
   * A Warning Event on the Run when the admission gate refuses it (`kubectl describe run`,
   * `krt describe`). Written only when the reason changes, as the status is, so a Run
   * that waits long is one Event. Best effort: the Run's status is the record.
   */
  async #recordRefusal(run: ReadonlyDeep<Run>, decision: Decision & { action: 'unschedulable' }): Promise<void> {
    const { name = '', namespace = '', uid = '' } = run.metadata;
    await this.#options.events.event({
      regarding: { apiVersion: API_GROUP_VERSION, kind: RUN_KIND, name, namespace, uid },
      type: 'Warning',
      reason: decision.reason,
      message: decision.message,
    });
  }
}

/** Why the block policy refuses the Runtime's Runs now (the Runtime suspended, the namespace blocked), if it does. */
function blockReason(
  caches: SchedulerReads,
  namespace: string,
  name: string,
  runtime: ReadonlyDeep<Runtime> | undefined,
): string | undefined {
  return decideBlockPolicy({
    runtime: name,
    namespace,
    runtimeSuspended: runtime?.spec.suspend === true,
    namespaceLabels: caches.namespaces.get(namespace)?.metadata?.labels,
  })?.reason;
}

function namespaceSlotCap(caches: SchedulerReads, namespace: string): RunSlotCap {
  return runSlotCap(caches.namespaces.get(namespace)?.metadata?.annotations);
}

/** The Runtime's Pods, each told whether it is of the Deployment's newest template. */
function runtimePods(caches: SchedulerReads, namespace: string, runtime: string): PodInfo[] {
  const ofRuntime = <T extends V1Pod | V1ReplicaSet>(object: ReadonlyDeep<T>): boolean =>
    object.metadata?.labels?.[LABELS.runtime] === runtime;
  const currentHash = currentTemplateHash(caches.replicaSets.list(namespace).filter(ofRuntime));
  return caches.pods
    .list(namespace)
    .filter(ofRuntime)
    .map((pod) => podInfo(pod, currentHash));
}

/**
 * The admission gate's verdict for each Pending Run: the block policy (the Runtime's
 * `spec.suspend`, the namespace's `kruntimes.io/blocked` label, from the caches), then
 * its creator's right to use the Runtime as just reviewed.
 */
function admissionVerdicts(
  caches: SchedulerReads,
  { namespace, name, runtime }: { namespace: string; name: string; runtime: ReadonlyDeep<Runtime> | undefined },
  infos: readonly RunInfo[],
  runs: ReadonlyMap<string, ReadonlyDeep<Run>>,
  access: ReadonlyMap<string, CreatorAccess>,
): Map<string, AdmissionVerdict> {
  const facts = {
    runtime: name,
    namespace,
    runtimeSuspended: runtime?.spec.suspend === true,
    namespaceLabels: caches.namespaces.get(namespace)?.metadata?.labels,
  };
  const verdicts = new Map<string, AdmissionVerdict>();
  for (const info of infos) {
    const creator = runs.get(info.uid)?.spec.creator;
    if (classify(info.phase) !== 'queued') continue;
    verdicts.set(info.uid, decideAdmission({ ...facts, access: creator === undefined ? undefined : access.get(creatorKey(creator)) }));
  }
  return verdicts;
}

/** The reasons of the admission gate and of the namespace's run-slot cap: a refusal is also an Event on the Run. */
const ADMISSION_REASONS: ReadonlySet<string> = new Set([
  RUN_REASONS.runtimeSuspended,
  RUN_REASONS.namespaceBlocked,
  RUN_REASONS.forbidden,
  RUN_REASONS.runSlotCapReached,
]);

function decisionEvent(decision: Decision): RunEvent {
  switch (decision.action) {
    case 'bind':
      return { type: 'Bind', pod: decision.pod.name, podUID: decision.pod.uid };
    case 'cancel':
      return { type: 'CancelBeforeAssignment' };
    case 'unschedulable':
      return { type: 'Unschedulable', reason: decision.reason, message: decision.message };
  }
}

/** runInfo of each Run, a turn of the event loop every RUNS_PER_TURN. */
async function runInfos(runs: Iterable<ReadonlyDeep<Run>>): Promise<RunInfo[]> {
  const infos: RunInfo[] = [];
  for (const run of runs) {
    infos.push(runInfo(run));
    if (infos.length % RUNS_PER_TURN === 0) await nextTurn();
  }
  return infos;
}
