import { DEFAULTS } from '@kruntimes/api';
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
