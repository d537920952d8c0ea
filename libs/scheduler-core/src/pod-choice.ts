/** What placement needs to know about one Pod of the Runtime. */
export interface PodInfo {
  name: string;
  uid: string;
  ready: boolean;
  deleting: boolean;
  /** The Pod's own capacity (runtime-workload's podCapacity); the Runtime's when unknown. */
  capacity: number | undefined;
  /** Marked by the autoscaler (POD_ANNOTATIONS.scaleDown): about to be removed, so nothing new goes there. */
  scaleDown: boolean;
  /** Of an older Pod template than the Deployment's newest (a rollout replaces it soon). */
  outdated: boolean;
}

/**
 * `spread`: most free slots first (kube-scheduler's LeastAllocated), so load is even.
 * `pack` (spec.scaling set): most held Runs first, so other Pods empty out and the
 * autoscaler can remove them without cutting work short.
 */
export type PlacementStrategy = 'spread' | 'pack';

/** One Pod's slots as a placement pass counts them. */
export interface PodSlots {
  pod: PodInfo;
  capacity: number;
  /** Runs holding a slot on it: visible in the cache, assumed, or bound earlier in this pass. */
  held: number;
}

/** A Pod that may receive a new Run: ready, not going away, not marked for scale-down. */
export function isBindable(pod: PodInfo): boolean {
  return pod.ready && !pod.deleting && !pod.scaleDown;
}

export function freeSlots(slots: PodSlots): number {
  return Math.max(0, slots.capacity - slots.held);
}

/**
 * The Pod a Run goes to among Pods with a free slot, or undefined when none has one. Pods
 * of the current template come before outdated ones (a Run moved off a draining Pod must
 * not land on the next Pod the rollout takes), then the strategy decides, then the name,
 * so that a plan is deterministic.
 */
export function choosePod(candidates: readonly PodSlots[], strategy: PlacementStrategy): PodSlots | undefined {
  let best: PodSlots | undefined;
  for (const slots of candidates) {
    if (freeSlots(slots) > 0 && (best === undefined || ranksBefore(slots, best, strategy))) best = slots;
  }
  return best;
}

function ranksBefore(a: PodSlots, b: PodSlots, strategy: PlacementStrategy): boolean {
  if (a.pod.outdated !== b.pod.outdated) return !a.pod.outdated;
  const byLoad = strategy === 'pack' ? a.held - b.held : freeSlots(a) - freeSlots(b);
  if (byLoad !== 0) return byLoad > 0;
  return a.pod.name < b.pod.name;
}

/** The Runtime's pool, for the message of a Run waiting for a slot (spec.scaling set). */
export interface ScalingFacts {
  runtime: string;
  /** spec.replicas: what the autoscaler asked for. */
  desiredPods: number;
  /** spec.scaling.maxReplicas. */
  maxPods: number;
}

/** Why there is no slot: the pool grows, or it cannot. The stored message ends with it. */
export function scalingState(scaling: ScalingFacts): string {
  return scaling.desiredPods >= scaling.maxPods ? `at its maximum of ${podCount(scaling.maxPods)}` : 'scaling up';
}

/** `waiting for a slot: Runtime python has 3 of 8 Pods ready, 12 of 12 slots used; scaling up`. */
export function waitingMessage(scaling: ScalingFacts, bindable: readonly PodSlots[]): string {
  const total = bindable.reduce((sum, slots) => sum + slots.capacity, 0);
  const used = bindable.reduce((sum, slots) => sum + Math.min(slots.held, slots.capacity), 0);
  return (
    `waiting for a slot: Runtime ${scaling.runtime} has ${bindable.length} of ${podCount(scaling.desiredPods)} ready, ` +
    `${used} of ${total} slots used; ${scalingState(scaling)}`
  );
}

function podCount(pods: number): string {
  return `${pods} ${pods === 1 ? 'Pod' : 'Pods'}`;
}
