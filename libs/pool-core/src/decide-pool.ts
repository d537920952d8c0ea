import { EVENT_REASONS, RUNTIME_REASONS } from '@kruntimes/api';
import { desiredPods } from './scaling.ts';
import type { Demand, ResolvedScaling } from './scaling.ts';

/**
 * How long a scale-down mark must have been visible before its Pod counts as confirmed empty: a bind the
 * scheduler made before it saw the mark reaches the autoscaler's Run cache within this time, and the Pod then
 * holds a Run and keeps its place. runtimed refusing claims on a marked Pod, and the drain, cover what is left.
 */
export const MARK_SETTLE_MS = 2_000;

/**
 * pod-deletion-cost values. The ReplicaSet removes lower costs first; Kubernetes asks not to rewrite the
 * annotation often, so held slots are coarsened to what the choice needs: marked < empty < holding Runs.
 * Writes happen only when a Pod's level changes, not with every bind.
 */
export const DELETION_COST = { marked: '-1', busy: '1' } as const;

/** A Runtime Pod as the autoscaler sees it. */
export interface PoolPod {
  name: string;
  /** Runs holding one of its slots (run-state's capacityHold). */
  held: number;
  ready: boolean;
  /** It has a deletionTimestamp: already going. */
  deleting: boolean;
  /** When it was marked for scale-down (markedAtMs of its POD_ANNOTATIONS.scaleDown); undefined: not marked. */
  markedAtMs: number | undefined;
  /**
   * Its mark is not a time the autoscaler wrote (e.g. `true`, set by a person to keep new Runs off the Pod): a fixed
   * pool leaves such a mark alone.
   */
  foreignMark: boolean;
  /** Its POD_ANNOTATIONS.deletionCost as it is. */
  deletionCost: string | undefined;
}

export interface PoolInput {
  scaling: ResolvedScaling;
  runsPerPod: number;
  /** The Runtime's spec.replicas as it is. */
  specReplicas: number;
  /** The spec.replicas this autoscaler last wrote or accepted; undefined: none known (then nothing counts as overridden). */
  lastWritten: number | undefined;
  demand: Demand;
  pods: readonly PoolPod[];
  /** Since when demand has needed fewer Pods than spec.replicas (kept by the caller between passes). */
  lowerSinceMs: number | undefined;
  nowMs: number;
}

export interface ScalingCondition {
  status: 'True' | 'False';
  reason: string;
  message: string;
}

/** One Pod's annotations to change: a string sets it, null removes it, absent leaves it. */
export interface PodAnnotationChange {
  pod: string;
  scaleDown?: string | null;
  deletionCost?: string | null;
}

export interface PoolDecision {
  /** The demand's Pods clamped to [min, max] (status.desiredReplicas). */
  desiredReplicas: number;
  /** spec.replicas after this pass. */
  replicas: number;
  /** spec.replicas to write (Event reason and message with it); undefined: it stays. */
  change: { replicas: number; reason: string; message: string } | undefined;
  /** spec.replicas was changed by someone else since the autoscaler's last write: a Warning Event, then it is put back. */
  overridden: { from: number; to: number; message: string } | undefined;
  lowerSinceMs: number | undefined;
  pods: PodAnnotationChange[];
  condition: ScalingCondition;
  requeueAfterMs: number | undefined;
}

/** The Pods kept marked for scale-down after this pass, the requeue, and what the replicas become. */
interface Plan {
  replicas: number;
  lowerSinceMs: number | undefined;
  marked: ReadonlySet<string>;
  condition: ScalingCondition;
  requeueAfterMs: number | undefined;
}

/**
 * One pass of the autoscaler over one Runtime with spec.scaling: up at once to what demand needs; down only after
 * demand has stayed lower for scaleDownDelaySeconds, and then only by Pods that hold no Run, marked first and
 * confirmed still empty on a later pass, with deletion costs that make the ReplicaSet remove exactly those.
 * spec.replicas belongs to the autoscaler: a change by someone else is reported and put back (a raise goes back
 * through the same safe scale-down, without the delay).
 */
export function decidePool(input: PoolInput): PoolDecision {
  const { desired } = desiredPods(input.demand, input.runsPerPod, input.scaling);
  const current = input.specReplicas;
  const overridden = input.lastWritten !== undefined && input.lastWritten !== current ? input.lastWritten : undefined;
  const plan = desired >= current ? holdOrGrow(input, desired) : shrink(input, desired, overridden !== undefined);
  const change = plan.replicas === current ? undefined : replicasChange(current, plan);
  return {
    desiredReplicas: desired,
    replicas: plan.replicas,
    change,
    overridden:
      overridden === undefined
        ? undefined
        : {
            from: overridden,
            to: current,
            message: `spec.replicas was set to ${current} by someone else; with spec.scaling the autoscaler owns it: ${
              desired >= current ? `back to ${plan.replicas}` : `back to ${desired} as its empty Pods are removed`
            }`,
          },
    lowerSinceMs: plan.lowerSinceMs,
    pods: annotationChanges(input, plan.marked),
    condition: plan.condition,
    requeueAfterMs: plan.requeueAfterMs,
  };
}

function replicasChange(current: number, plan: Plan): PoolDecision['change'] {
  const reason = plan.replicas > current ? EVENT_REASONS.scaledUp : EVENT_REASONS.scaledDown;
  return { replicas: plan.replicas, reason, message: plan.condition.message };
}

/** Demand needs as many Pods as there are, or more: raised at once, nothing marked (but what the ReplicaSet is removing). */
function holdOrGrow(input: PoolInput, desired: number): Plan {
  const current = input.specReplicas;
  const { needed } = desiredPods(input.demand, input.runsPerPod, input.scaling);
  const live = input.pods.filter((pod) => !pod.deleting);
  // Pods beyond spec.replicas are the marked ones a previous shrink let go: they keep their marks.
  const marked = desired > current ? new Set<string>() : new Set(inFlight(input, live).map((pod) => pod.name));
  const ready = live.filter((pod) => pod.ready).length;
  const demand = demandText(input);
  const condition = ((): ScalingCondition => {
    if (needed > input.scaling.maxReplicas) {
      return {
        status: desired > current ? 'True' : 'False',
        reason: RUNTIME_REASONS.atMaximum,
        message: `${needed} Pods needed, at the maximum of ${input.scaling.maxReplicas} (${demand})`,
      };
    }
    if (desired > current)
      return { status: 'True', reason: RUNTIME_REASONS.scaledUp, message: `${waiting(input)}${current} -> ${desired} Pods (${demand})` };
    if (input.demand.pending > 0 && ready < current) {
      return {
        status: 'True',
        reason: RUNTIME_REASONS.scaledUp,
        message: `${waiting(input)}${ready} of ${current} Pods ready (${demand})`,
      };
    }
    return { status: 'False', reason: RUNTIME_REASONS.steady, message: `${current} Pods for ${demand}` };
  })();
  return { replicas: desired, lowerSinceMs: undefined, marked, condition, requeueAfterMs: undefined };
}

/** Demand needs fewer Pods: after the delay, mark empty Pods, and shrink by those confirmed still empty. */
function shrink(input: PoolInput, desired: number, overridden: boolean): Plan {
  const current = input.specReplicas;
  const delayMs = input.scaling.scaleDownDelaySeconds * 1000;
  const { nowMs } = input;
  // A raise by someone else is not demand: its excess goes without waiting for the delay.
  const lowerSinceMs = overridden ? Math.min(input.lowerSinceMs ?? nowMs, nowMs - delayMs) : (input.lowerSinceMs ?? nowMs);
  const live = input.pods.filter((pod) => !pod.deleting);
  const demand = demandText(input);
  const waitedMs = nowMs - lowerSinceMs;
  if (waitedMs < delayMs) {
    return {
      replicas: current,
      lowerSinceMs,
      marked: new Set(inFlight(input, live).map((pod) => pod.name)),
      // An absolute time, not a countdown: the message stays the same from pass to pass.
      condition: delayed(`${desired} of ${current} Pods needed (${demand}); empty Pods go from ${wholeSeconds(lowerSinceMs + delayMs)}`),
      requeueAfterMs: delayMs - waitedMs,
    };
  }
  const toGo = Math.max(0, live.length - desired);
  const chosen = live
    .filter((pod) => pod.held === 0)
    .sort(removalOrder(nowMs))
    .slice(0, toGo);
  const marked = new Set(chosen.map((pod) => pod.name));
  const confirmed = chosen.filter((pod) => isConfirmed(pod, nowMs));
  // The ReplicaSet removes a Pod that is not ready before any ready one, whatever its cost: an unmarked one would go first.
  const blockers = live.filter((pod) => !pod.ready && !marked.has(pod.name));
  const alreadyGoing = Math.max(0, live.length - current);
  const shrinkBy = blockers.length > 0 ? 0 : Math.min(current - desired, Math.max(0, confirmed.length - alreadyGoing));
  const unconfirmed = chosen.filter((pod) => !isConfirmed(pod, nowMs));
  const requeueAfterMs =
    unconfirmed.length === 0
      ? undefined
      : Math.max(1, Math.min(...unconfirmed.map((pod) => (pod.markedAtMs ?? nowMs) + MARK_SETTLE_MS - nowMs)));
  if (shrinkBy > 0) {
    const replicas = current - shrinkBy;
    return {
      replicas,
      lowerSinceMs,
      marked,
      condition: {
        status: 'True',
        reason: RUNTIME_REASONS.scaledDown,
        message: `${current} -> ${replicas} Pods, only empty ones removed (${demand}; ${desired} needed for at least ${input.scaling.scaleDownDelaySeconds} s)`,
      },
      requeueAfterMs,
    };
  }
  const why =
    chosen.length < toGo
      ? `${toGo - chosen.length} of the ${toGo} Pods to remove still hold Runs`
      : blockers.length > 0
        ? `${blockers.length} Pods not ready yet`
        : `${chosen.length} empty Pods marked, removed once they stay empty`;
  return {
    replicas: current,
    lowerSinceMs,
    marked,
    condition: delayed(`${desired} of ${current} Pods needed (${demand}); ${why}`),
    requeueAfterMs,
  };
}

function wholeSeconds(ms: number): string {
  return new Date(Math.ceil(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function delayed(message: string): ScalingCondition {
  return { status: 'True', reason: RUNTIME_REASONS.scaleDownDelayed, message };
}

/** Marked, empty Pods beyond spec.replicas: the ones a previous shrink let go and the ReplicaSet is removing. */
function inFlight(input: PoolInput, live: readonly PoolPod[]): PoolPod[] {
  const count = Math.max(0, live.length - input.specReplicas);
  return live
    .filter((pod) => pod.markedAtMs !== undefined && pod.held === 0)
    .sort(removalOrder(input.nowMs))
    .slice(0, count);
}

function isConfirmed(pod: PoolPod, nowMs: number): boolean {
  return pod.markedAtMs !== undefined && nowMs - pod.markedAtMs >= MARK_SETTLE_MS;
}

/** Which empty Pods go first: marked and confirmed, marked, not ready (the ReplicaSet takes those first anyway), then by name. */
function removalOrder(nowMs: number): (a: PoolPod, b: PoolPod) => number {
  const rank = (pod: PoolPod): number => (isConfirmed(pod, nowMs) ? 0 : pod.markedAtMs !== undefined ? 1 : pod.ready ? 3 : 2);
  return (a, b) => rank(a) - rank(b) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/** Marks set on newly chosen Pods and removed from the others; deletion costs where a Pod's level changed. */
function annotationChanges(input: PoolInput, marked: ReadonlySet<string>): PodAnnotationChange[] {
  const markValue = new Date(input.nowMs).toISOString();
  return input.pods.flatMap((pod) => {
    if (pod.deleting) return [];
    const keep = marked.has(pod.name);
    const change: PodAnnotationChange = { pod: pod.name };
    if (keep && pod.markedAtMs === undefined) change.scaleDown = markValue;
    if (!keep && pod.markedAtMs !== undefined) change.scaleDown = null;
    const cost = keep ? DELETION_COST.marked : pod.held > 0 ? DELETION_COST.busy : undefined;
    if (cost !== pod.deletionCost) change.deletionCost = cost ?? null;
    return change.scaleDown === undefined && change.deletionCost === undefined ? [] : [change];
  });
}

/**
 * A fixed pool (no spec.scaling): the autoscaler lets go of the Pods it marked (its mark and cost go, so that the
 * scheduler binds there again; a mark someone else set stays) and keeps each Pod's deletion cost at busy or none, so that when a person, HPA or KEDA
 * lowers spec.replicas the ReplicaSet removes Pods that hold nothing first. A cost it did not write (any other value)
 * is someone else's and is left alone.
 */
export function fixedPoolAnnotations(pods: readonly PoolPod[]): PodAnnotationChange[] {
  const ours = (cost: string | undefined): boolean => cost === undefined || cost === DELETION_COST.marked || cost === DELETION_COST.busy;
  return pods.flatMap((pod) => {
    if (pod.deleting) return [];
    const change: PodAnnotationChange = { pod: pod.name };
    if (pod.markedAtMs !== undefined && !pod.foreignMark) change.scaleDown = null;
    const cost = pod.held > 0 ? DELETION_COST.busy : undefined;
    if (ours(pod.deletionCost) && cost !== pod.deletionCost) change.deletionCost = cost ?? null;
    return change.scaleDown === undefined && change.deletionCost === undefined ? [] : [change];
  });
}

/** When a POD_ANNOTATIONS.scaleDown value says the Pod was marked; an unreadable value counts as long ago. */
export function markedAtMs(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Date.parse(value);
  return Number.isNaN(parsed) ? 0 : parsed;
}

/** A POD_ANNOTATIONS.scaleDown value the autoscaler did not write (it writes the time it marked the Pod). */
export function isForeignMark(value: string | undefined): boolean {
  return value !== undefined && Number.isNaN(Date.parse(value));
}

function demandText(input: PoolInput): string {
  const { held, pending } = input.demand;
  const spare = input.scaling.spareRuns;
  return `${held} held, ${pending} waiting${spare > 0 ? `, ${spare} spare` : ''}, ${input.runsPerPod} per Pod`;
}

function waiting(input: PoolInput): string {
  return input.demand.pending > 0 ? `${input.demand.pending} Runs waiting: ` : '';
}
