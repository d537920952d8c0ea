// Elastic Runtime pools: the autoscaler's pure decisions (docs/operations.md "Elastic pools").
export { desiredPods, resolveScaling, waitsForSlot } from './scaling.ts';
export type { Demand, DesiredPods, ResolvedScaling } from './scaling.ts';
export { DELETION_COST, MARK_SETTLE_MS, decidePool, fixedPoolAnnotations, isForeignMark, markedAtMs } from './decide-pool.ts';
export type { PodAnnotationChange, PoolDecision, PoolInput, PoolPod, ScalingCondition } from './decide-pool.ts';
