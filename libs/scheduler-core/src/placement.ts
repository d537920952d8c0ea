import { RUN_REASONS } from '@kruntimes/api';
import type { RunPhase } from '@kruntimes/api';
import { classify } from '@kruntimes/run-state';
import type { UnschedulableReason } from '@kruntimes/run-state';
import type { AdmissionVerdict } from './admission-gate.ts';
import { choosePod, freeSlots, isBindable, scalingState, waitingMessage } from './pod-choice.ts';
import type { PlacementStrategy, PodInfo, PodSlots, ScalingFacts } from './pod-choice.ts';
import { decideRunSlot } from './run-slot-cap.ts';
import type { NamespaceSlots } from './run-slot-cap.ts';

export type { PodInfo, ScalingFacts } from './pod-choice.ts';

/** What placement needs to know about one Run of the Runtime. */
export interface RunInfo {
  uid: string;
  name: string;
  creationTimestamp: string;
  phase: RunPhase;
  /** `status.reason` as stored: an Unschedulable reason is written only when it changes. */
  reason: string | undefined;
  /** `status.message` as stored: a WaitingForCapacity Run is written again when its scaling state changes. */
  message: string | undefined;
  assignedPodUID: string | undefined;
  /** From run-state's capacityHold (assigned, and the phase or the registration-cleanup finalizer holds a unit). */
  holdsCapacity: boolean;
  cancelRequested: boolean;
  /** run-state's isExecutedElsewhere (spec.origin): never bound, cancelled or reported unschedulable here. */
  executedElsewhere: boolean;
  deleting: boolean;
  notBefore: string | undefined;
  /** status.source is recorded: the execution snapshot exists (made by the snapshot controller). */
  hasSnapshot: boolean;
}

export interface PlacementInput {
  runtimeExists: boolean;
  /** `spec.runs` of the Runtime: the capacity of a Pod that does not state its own. */
  runsPerPod: number;
  pods: readonly PodInfo[];
  /** Every Run of the Runtime in the cache, in any phase. */
  runs: readonly RunInfo[];
  /**
   * Run UID -> Pod UID of binds this scheduler wrote that its cache does not show yet
   * (the assume cache). They hold capacity exactly like visible assignments.
   */
  assumed: ReadonlyMap<string, string>;
  /**
   * Run UID -> the admission gate's verdict (block policy, the creator's right to use the
   * Runtime; see decideAdmission). A Run without one is admitted.
   */
  admission?: ReadonlyMap<string, AdmissionVerdict>;
  /** The Runtime's spec.scaling, when set: placement packs, and a Run without a slot waits WaitingForCapacity. */
  scaling?: ScalingFacts | undefined;
  /**
   * The namespace's run-slot cap and the slots its Runs hold (all its Runtimes); undefined
   * when it has no cap. A Run over the cap waits RunSlotCapReached before any Pod is looked
   * at, so it is never counted WaitingForCapacity: Pods added for it could not take it.
   */
  namespaceSlots?: NamespaceSlots | undefined;
  /**
   * Run UIDs whose waiting reason this scheduler is writing (written beside the passes, see WAIT_WRITES_PER_PASS):
   * not planned again, and they take their share of the pass's writes until answered.
   */
  waitWritesInFlight?: ReadonlySet<string>;
  nowMs: number;
}

export type Decision =
  | { action: 'bind'; run: RunInfo; pod: PodInfo }
  | { action: 'cancel'; run: RunInfo }
  | { action: 'unschedulable'; run: RunInfo; reason: UnschedulableReason; message: string };

export interface Plan {
  /** In the order they should be written: oldest Run first. */
  decisions: Decision[];
  /** Earliest `notBefore` still in the future: reconcile again then, not before. */
  retryAtMs: number | undefined;
  /** Pending Runs left unbound after this plan (the pending-Runs gauge). */
  unbound: number;
  /** Runs the admission gate deferred (no answer about their creator's right): look again soon. */
  deferred: number;
  /** Pending Runs that wait WaitingForCapacity (spec.scaling set, no free slot). */
  waitingForCapacity: number;
  /** Pending Runs that wait RunSlotCapReached (their namespace holds all the run slots its cap allows). */
  waitingForSlotCap: number;
  /** Free capacity per bindable Pod UID after this plan. */
  free: Map<string, number>;
  /** Waiting reasons left for a later pass (beyond WAIT_WRITES_PER_PASS with those in flight). */
  waitWritesLeft: number;
  /**
   * Pending Runs that wait with nothing to write and no time to look again at, by UID: their
   * stored reason (SETTLED_SILENT when nothing is said, e.g. no snapshot yet). Such a Run
   * waits alike at every later pass until it changes or the plan's `tail` does (see SettledRuns).
   */
  settled: Map<string, string>;
  /**
   * What one more admitted Run would get after this plan's binds: `room` when it would bind,
   * else its waiting reason and what of the message is compared before a rewrite.
   */
  tail: string;
}

/** A settled Run that waits silently (no snapshot yet): nothing is written for it. */
export const SETTLED_SILENT = '';

/**
 * Status writes that only say why a Run waits (`unschedulable`), at most this many in flight for a Runtime: the
 * scheduler writes them beside its passes, not in them, and a pass plans only what is left of this share. In a burst
 * on a 2-core machine such a write took 0.5 to 2 s, and a pass that waited for the reasons of the Runs just
 * snapshotted (or of every Run of the burst) held back the binds to slots freed meanwhile and to Pods just ready
 * (measured with the elastic-pool bench). The rest is written as earlier writes are answered.
 */
export const WAIT_WRITES_PER_PASS = 16;

/**
 * Oldest-first placement of one Runtime's Pending Runs onto its bindable Pods (ready, not
 * deleting, not marked for scale-down).
 *
 * Free capacity of a Pod = its capacity - Runs that hold capacity on it (visible or assumed),
 * so a Run that ended but still carries the registration-cleanup finalizer keeps its
 * unit until runtimed released it. Which Pod with room wins is choosePod's: current
 * template first, then spread (most free) or, with spec.scaling, pack (most held). A Run
 * in retry backoff (`notBefore` in the future) does not block younger Runs.
 */
export function planPlacement(input: PlacementInput): Plan {
  const slots = podSlots(input);
  const strategy: PlacementStrategy = input.scaling === undefined ? 'spread' : 'pack';
  const inFlight = input.waitWritesInFlight ?? new Set<string>();
  const plan: PlanInProgress = {
    waitWrites: inFlight.size,
    inFlight,
    decisions: [],
    retryAtMs: undefined,
    unbound: 0,
    deferred: 0,
    waitingForCapacity: 0,
    waitingForSlotCap: 0,
    free: new Map(),
    waitWritesLeft: 0,
    settled: new Map(),
    tail: '',
  };
  // A copy: each bind of this pass takes one of the namespace's slots.
  const namespaceSlots = input.namespaceSlots === undefined ? undefined : { ...input.namespaceSlots };
  for (const run of pendingRuns(input)) {
    const waiting = waitingCause(input, run) ?? slotCapWait(namespaceSlots);
    if (waiting === 'cancel') plan.decisions.push({ action: 'cancel', run });
    else if (waiting !== undefined) wait(plan, run, waiting);
    else if (placeOne(plan, run, slots, strategy, input.scaling) && namespaceSlots !== undefined) namespaceSlots.held += 1;
  }
  for (const pod of slots) plan.free.set(pod.pod.uid, freeSlots(pod));
  plan.tail = tailOf(slots, namespaceSlots, input.scaling);
  const { waitWrites: _written, inFlight: _inFlight, ...made } = plan;
  return made;
}

/** A plan being made: it counts the waiting reasons it writes. */
interface PlanInProgress extends Plan {
  /** Waiting reasons in flight or planned in this pass. */
  waitWrites: number;
  inFlight: ReadonlySet<string>;
}

/** Why a Pending Run is not placed before Pods are even looked at; undefined when it may be. */
type Waiting = 'cancel' | Wait;
/**
 * `silent`: nothing is written (another writer says why, or nothing needs saying).
 * `rewriteOnMessage`: written again when the message changes too (it names a cap that changed).
 */
type Wait =
  | { kind: 'silent'; retryAtMs?: number; deferred?: boolean }
  | { kind: 'unschedulable'; reason: UnschedulableReason; message: string; rewriteOnMessage?: boolean };

function waitingCause(input: PlacementInput, run: RunInfo): Waiting | undefined {
  if (run.cancelRequested) return 'cancel';
  // The snapshot gate: a Run runs the source resolved before its first binding, never a
  // later read. Nothing is written: the snapshot controller records why it waits.
  if (!run.hasSnapshot) return { kind: 'silent' };
  const notBeforeMs = run.notBefore === undefined ? undefined : Date.parse(run.notBefore);
  if (notBeforeMs !== undefined && notBeforeMs > input.nowMs) return { kind: 'silent', retryAtMs: notBeforeMs };
  if (!input.runtimeExists) {
    return {
      kind: 'unschedulable',
      reason: RUN_REASONS.runtimeNotFound,
      message: 'the Runtime named in spec.runtime does not exist in this namespace',
    };
  }
  const verdict = input.admission?.get(run.uid);
  if (verdict?.action === 'refuse') return { kind: 'unschedulable', reason: verdict.reason, message: verdict.message };
  if (verdict?.action === 'defer') return { kind: 'silent', deferred: true };
  return undefined;
}

/** The namespace's run-slot cap, asked once nothing else keeps the Run waiting and before any Pod is looked at. */
function slotCapWait(namespaceSlots: NamespaceSlots | undefined): Wait | undefined {
  const refusal = namespaceSlots === undefined ? undefined : decideRunSlot(namespaceSlots);
  return refusal === undefined ? undefined : { kind: 'unschedulable', ...refusal, rewriteOnMessage: true };
}

function wait(plan: PlanInProgress, run: RunInfo, waiting: Wait): void {
  plan.unbound += 1;
  if (waiting.kind === 'unschedulable' && waiting.reason === RUN_REASONS.runSlotCapReached) plan.waitingForSlotCap += 1;
  if (waiting.kind === 'unschedulable') {
    // Writing the same reason again would only churn resourceVersions and watch events.
    const stale = run.reason !== waiting.reason || (waiting.rewriteOnMessage === true && run.message !== waiting.message);
    if (stale) pushWaitWrite(plan, { action: 'unschedulable', run, reason: waiting.reason, message: waiting.message });
    else plan.settled.set(run.uid, waiting.reason);
    return;
  }
  if (waiting.deferred === true) plan.deferred += 1;
  if (waiting.retryAtMs !== undefined) plan.retryAtMs = Math.min(plan.retryAtMs ?? waiting.retryAtMs, waiting.retryAtMs);
  if (waiting.deferred !== true && waiting.retryAtMs === undefined) plan.settled.set(run.uid, SETTLED_SILENT);
}

/** Binds the Run to the Pod choosePod picks, or makes it wait; true when it was bound. */
function placeOne(
  plan: PlanInProgress,
  run: RunInfo,
  slots: readonly PodSlots[],
  strategy: PlacementStrategy,
  scaling: ScalingFacts | undefined,
): boolean {
  const chosen = choosePod(slots, strategy);
  if (chosen !== undefined) {
    chosen.held += 1;
    plan.decisions.push({ action: 'bind', run, pod: chosen.pod });
    return true;
  }
  if (scaling === undefined) wait(plan, run, noSlot(slots));
  else waitForSlot(plan, run, slots, scaling);
  return false;
}

/**
 * With spec.scaling: WaitingForCapacity. The counts in the message are those of the last
 * write: it is written again only when the reason or the scaling state changes, not at
 * every Pod or slot that changes (that would rewrite every waiting Run while a pool grows).
 */
function waitForSlot(plan: PlanInProgress, run: RunInfo, slots: readonly PodSlots[], scaling: ScalingFacts): void {
  plan.waitingForCapacity += 1;
  plan.unbound += 1;
  const current = run.reason === RUN_REASONS.waitingForCapacity && run.message?.endsWith(scalingState(scaling)) === true;
  if (!current) {
    pushWaitWrite(plan, { action: 'unschedulable', run, reason: RUN_REASONS.waitingForCapacity, message: waitingMessage(scaling, slots) });
  } else plan.settled.set(run.uid, RUN_REASONS.waitingForCapacity);
}

/**
 * What one more admitted Run would get after the plan's binds, as far as it decides a
 * rewrite: the slot cap's reason and message (rewritten when the cap changes), the scaling
 * state (WaitingForCapacity), or the reason alone (NoReadyPods, NoCapacity); `room` when it
 * would bind.
 */
function tailOf(slots: readonly PodSlots[], namespaceSlots: NamespaceSlots | undefined, scaling: ScalingFacts | undefined): string {
  const capped = slotCapWait(namespaceSlots);
  if (capped?.kind === 'unschedulable') return `${capped.reason}: ${capped.message}`;
  if (slots.some((pod) => freeSlots(pod) > 0)) return 'room';
  if (scaling !== undefined) return `${RUN_REASONS.waitingForCapacity}: ${scalingState(scaling)}`;
  const wait = noSlot(slots);
  return wait.kind === 'unschedulable' ? wait.reason : '';
}

/** The reasons of Runs that wait only for room (a slot, or the namespace's cap): the oldest of them bind when room frees. */
export const ROOM_REASONS: ReadonlySet<string> = new Set([
  RUN_REASONS.noReadyPods,
  RUN_REASONS.noCapacity,
  RUN_REASONS.waitingForCapacity,
  RUN_REASONS.runSlotCapReached,
]);

/** A waiting reason to write, unless this pass has written its share of them (then a later pass writes it). */
function pushWaitWrite(plan: PlanInProgress, decision: Decision & { action: 'unschedulable' }): void {
  if (plan.inFlight.has(decision.run.uid)) return;
  if (plan.waitWrites < WAIT_WRITES_PER_PASS) {
    plan.waitWrites += 1;
    plan.decisions.push(decision);
  } else plan.waitWritesLeft += 1;
}

/** Without spec.scaling: today's reasons. */
function noSlot(slots: readonly PodSlots[]): Wait {
  if (slots.length === 0) return { kind: 'unschedulable', reason: RUN_REASONS.noReadyPods, message: 'the Runtime has no ready Pod' };
  return { kind: 'unschedulable', reason: RUN_REASONS.noCapacity, message: `all ${slots.length} ready Pods are full` };
}

/**
 * How many Runs a plan of this input could bind at most: the free slots of its bindable Pods,
 * within the namespace's run-slot cap (none when the cap is not a whole number).
 */
export function roomFor(input: Pick<PlacementInput, 'pods' | 'runs' | 'assumed' | 'runsPerPod' | 'namespaceSlots'>): number {
  const free = podSlots(input).reduce((sum, pod) => sum + freeSlots(pod), 0);
  const cap = input.namespaceSlots?.cap;
  if (cap === undefined || cap.kind === 'none') return free;
  return cap.kind === 'cap' ? Math.min(free, Math.max(0, cap.slots - (input.namespaceSlots?.held ?? 0))) : 0;
}

/** Each bindable Pod with the Runs holding its slots, visible or assumed. */
function podSlots(input: Pick<PlacementInput, 'pods' | 'runs' | 'assumed' | 'runsPerPod'>): PodSlots[] {
  const held = new Map<string, number>();
  for (const run of input.runs) {
    const assumedPod = input.assumed.get(run.uid);
    const pod = assumedPod ?? (run.holdsCapacity ? run.assignedPodUID : undefined);
    if (pod !== undefined) held.set(pod, (held.get(pod) ?? 0) + 1);
  }
  return input.pods.filter(isBindable).map((pod) => ({ pod, capacity: pod.capacity ?? input.runsPerPod, held: held.get(pod.uid) ?? 0 }));
}

/** The Runs this pass decides on, oldest first: Pending, placed here, not being deleted, not already assumed bound. */
function pendingRuns(input: PlacementInput): RunInfo[] {
  // Each creation time parsed once, not at every comparison.
  return input.runs
    .filter((run) => classify(run.phase) === 'queued' && !run.executedElsewhere && !run.deleting && !input.assumed.has(run.uid))
    .map((run) => ({ run, name: run.name, createdMs: Date.parse(run.creationTimestamp) }))
    .sort(oldestFirst)
    .map(({ run }) => run);
}

/** A Run's place in the order of oldestFirst: its creation time (NaN when unknown) and name. */
export interface RunOrder {
  createdMs: number;
  name: string;
}

/** Creation time, then name: the order a FIFO queue of creations would have. */
export function oldestFirst(a: RunOrder, b: RunOrder): number {
  const byTime = a.createdMs - b.createdMs;
  if (byTime !== 0 && !Number.isNaN(byTime)) return byTime;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
