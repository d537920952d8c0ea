import { RUN_REASONS } from '@kruntimes/api';
import type { RunPhase } from '@kruntimes/api';
import { classify } from '@kruntimes/run-state';
import type { UnschedulableReason } from '@kruntimes/run-state';
import type { AdmissionVerdict } from './admission-gate.ts';

/** What placement needs to know about one Pod of the Runtime. */
export interface PodInfo {
  name: string;
  uid: string;
  ready: boolean;
  deleting: boolean;
  /** The Pod's own capacity (runtime-workload's podCapacity); the Runtime's when unknown. */
  capacity: number | undefined;
}

/** What placement needs to know about one Run of the Runtime. */
export interface RunInfo {
  uid: string;
  name: string;
  creationTimestamp: string;
  phase: RunPhase;
  /** `status.reason` as stored: an Unschedulable reason is written only when it changes. */
  reason: string | undefined;
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
  /** Free capacity per ready, non-deleting Pod UID after this plan. */
  free: Map<string, number>;
}

/**
 * Oldest-first placement of one Runtime's Pending Runs onto its ready, non-deleting Pods.
 *
 * Free capacity of a Pod = its capacity - Runs that hold capacity on it (visible or assumed),
 * so a Run that ended but still carries the registration-cleanup finalizer keeps its
 * unit until runtimed released it. Among Pods with room, the one with the most free
 * capacity wins (spreading load like kube-scheduler's LeastAllocated), ties by name so
 * that a plan is deterministic. A Run in retry backoff (`notBefore` in the future)
 * does not block younger Runs.
 */
export function planPlacement(input: PlacementInput): Plan {
  const eligible = input.pods.filter((pod) => pod.ready && !pod.deleting);
  const used = new Map<string, number>();
  for (const run of input.runs) {
    const assumedPod = input.assumed.get(run.uid);
    const pod = assumedPod ?? (run.holdsCapacity ? run.assignedPodUID : undefined);
    if (pod !== undefined) used.set(pod, (used.get(pod) ?? 0) + 1);
  }
  const free = new Map(eligible.map((pod) => [pod.uid, Math.max(0, (pod.capacity ?? input.runsPerPod) - (used.get(pod.uid) ?? 0))]));

  const pending = input.runs
    .filter((run) => classify(run.phase) === 'queued' && !run.executedElsewhere && !run.deleting && !input.assumed.has(run.uid))
    .sort(oldestFirst);

  const decisions: Decision[] = [];
  let retryAtMs: number | undefined;
  let unbound = 0;
  let deferred = 0;
  const unschedulable = (run: RunInfo, reason: UnschedulableReason, message: string): void => {
    unbound += 1;
    // Writing the same reason again would only churn resourceVersions and watch events.
    if (run.reason !== reason) decisions.push({ action: 'unschedulable', run, reason, message });
  };

  for (const run of pending) {
    if (run.cancelRequested) {
      decisions.push({ action: 'cancel', run });
      continue;
    }
    // The snapshot gate: a Run runs the source resolved before its first binding, never a
    // later read. Nothing is written: the snapshot controller records why it waits.
    if (!run.hasSnapshot) {
      unbound += 1;
      continue;
    }
    const notBeforeMs = run.notBefore === undefined ? undefined : Date.parse(run.notBefore);
    if (notBeforeMs !== undefined && notBeforeMs > input.nowMs) {
      unbound += 1;
      retryAtMs = Math.min(retryAtMs ?? notBeforeMs, notBeforeMs);
      continue;
    }
    if (!input.runtimeExists) {
      unschedulable(run, RUN_REASONS.runtimeNotFound, 'the Runtime named in spec.runtime does not exist in this namespace');
      continue;
    }
    const verdict = input.admission?.get(run.uid);
    if (verdict?.action === 'refuse') {
      unschedulable(run, verdict.reason, verdict.message);
      continue;
    }
    if (verdict?.action === 'defer') {
      unbound += 1;
      deferred += 1;
      continue;
    }
    if (eligible.length === 0) {
      unschedulable(run, RUN_REASONS.noReadyPods, 'the Runtime has no ready Pod');
      continue;
    }
    const pod = roomiest(eligible, free);
    if (pod === undefined) {
      unschedulable(run, RUN_REASONS.noCapacity, `all ${eligible.length} ready Pods are full`);
      continue;
    }
    free.set(pod.uid, (free.get(pod.uid) ?? 0) - 1);
    decisions.push({ action: 'bind', run, pod });
  }
  return { decisions, retryAtMs, unbound, deferred, free };
}

function roomiest(pods: readonly PodInfo[], free: ReadonlyMap<string, number>): PodInfo | undefined {
  let best: PodInfo | undefined;
  let bestFree = 0;
  for (const pod of pods) {
    const room = free.get(pod.uid) ?? 0;
    if (room > bestFree || (room === bestFree && room > 0 && best !== undefined && pod.name < best.name)) {
      best = pod;
      bestFree = room;
    }
  }
  return best;
}

/** Creation time, then name: the order a FIFO queue of creations would have. */
function oldestFirst(a: RunInfo, b: RunInfo): number {
  const byTime = Date.parse(a.creationTimestamp) - Date.parse(b.creationTimestamp);
  if (byTime !== 0 && !Number.isNaN(byTime)) return byTime;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
