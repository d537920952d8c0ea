import { DEFAULTS, RUN_REASONS } from '@kruntimes/api';
import type { RuntimeScaling } from '@kruntimes/api';

/** spec.scaling with the CRD's defaults applied (code must not rely on the API server having defaulted it). */
export interface ResolvedScaling {
  minReplicas: number;
  maxReplicas: number;
  spareRuns: number;
  scaleDownDelaySeconds: number;
}

export function resolveScaling(scaling: RuntimeScaling): ResolvedScaling {
  return {
    minReplicas: scaling.minReplicas ?? DEFAULTS.minReplicas,
    maxReplicas: scaling.maxReplicas,
    spareRuns: scaling.spareRuns ?? DEFAULTS.spareRuns,
    scaleDownDelaySeconds: scaling.scaleDownDelaySeconds ?? DEFAULTS.scaleDownDelaySeconds,
  };
}

/** What the pool must hold: Runs holding a slot, Runs waiting Pending for one, and the spare slots kept free. */
export interface Demand {
  held: number;
  pending: number;
}

export interface DesiredPods {
  /** Pods the demand needs, unclamped. */
  needed: number;
  /** `needed` clamped to [minReplicas, maxReplicas]: what spec.replicas should become. */
  desired: number;
}

/**
 * Pods = ceil((held + pending + spareRuns) / runsPerPod), clamped to [min, max]. A Pending Run
 * at zero Pods needs one Pod (the ceiling of anything above zero is at least 1): scale from zero.
 */
export function desiredPods(demand: Demand, runsPerPod: number, scaling: ResolvedScaling): DesiredPods {
  const slots = demand.held + demand.pending + scaling.spareRuns;
  const needed = Math.ceil(slots / Math.max(1, runsPerPod));
  const minimum = Math.min(scaling.minReplicas, scaling.maxReplicas);
  return { needed, desired: Math.min(scaling.maxReplicas, Math.max(minimum, needed)) };
}

/**
 * Pending reasons that more Pods would not end: the scheduler refuses the Run whatever the pool (the Runtime
 * suspended, the namespace blocked or at its run-slot cap, the creator forbidden) or it cannot run yet (no source
 * snapshot). Such Runs are not demand: counting them would start Pods that stay empty.
 */
const NOT_WAITING_FOR_A_SLOT: ReadonlySet<string> = new Set([
  RUN_REASONS.runtimeSuspended,
  RUN_REASONS.namespaceBlocked,
  RUN_REASONS.forbidden,
  RUN_REASONS.runSlotCapReached,
  RUN_REASONS.sourceNotFound,
  RUN_REASONS.sourceTooLarge,
  RUN_REASONS.sourceForbidden,
  RUN_REASONS.sourceDigestMismatch,
  RUN_REASONS.sourceSnapshotConflict,
]);

/** Whether a Pending Run with this status.reason counts as demand for a slot. */
export function waitsForSlot(pendingReason: string | undefined): boolean {
  return pendingReason === undefined || !NOT_WAITING_FOR_A_SLOT.has(pendingReason);
}
