import { CONDITION_TYPES, DEFAULTS, RUNTIME_REASONS } from '@kruntimes/api';
import type { Condition, ConditionStatus, RuntimeRunIsolation, RuntimeStatus } from '@kruntimes/api';
import type { RunIsolation } from '@kruntimes/runtime-workload';
import { setCondition } from '@kruntimes/run-state';
import type { PoolStatus } from './pool-decisions.ts';

export interface RuntimePodView {
  ready: boolean;
  deleting: boolean;
  /** The Pod's own capacity (runtime-workload's podCapacity); `runsPerPod` when unknown. */
  capacity: number | undefined;
}

/** The Deployment's rollout as its status reports it (absent before it exists). */
export interface RolloutView {
  generation: number;
  observedGeneration: number;
  replicas: number;
  updatedReplicas: number;
  availableReplicas: number;
  desiredReplicas: number;
  /**
   * The cached Deployment already carries the Runtime's spec (this pass wrote nothing). A
   * Deployment this pass rewrote (or tried to: a fenced write) is rolling whatever its cached
   * status says: the cache has not seen the new template yet.
   */
  current: boolean;
}

export interface RuntimeStatusInput {
  generation: number | undefined;
  runsPerPod: number | undefined;
  previous: RuntimeStatus | undefined;
  pods: readonly RuntimePodView[];
  /** Runs of the Runtime that hold capacity (run-state's holdsCapacity). */
  runsHoldingCapacity: number;
  /** Runs of the Runtime waiting Pending for a slot. */
  pendingRuns: number;
  /** The label selector of its Pods (for /scale). */
  selector: string;
  /** The autoscaler's decision; undefined without spec.scaling (then no desiredReplicas and no Scaling condition). */
  pool: PoolStatus | undefined;
  rollout: RolloutView | undefined;
  /** Why the Runtime cannot become a workload; non-empty overrides everything else. */
  problems: readonly string[];
  /** What the controller-manager gives the Runtime's Pods (--user-namespaces). */
  isolation: RunIsolation;
  now: string;
}

/**
 * The Runtime's status from what exists. `totalCapacity` sums the capacity of ready,
 * non-deleting Pods only (each Pod's own, as the scheduler counts it): that is what the
 * scheduler can bind to. `usedCapacity` counts every Run that
 * holds a unit, wherever it is, so during a roll or a Pod loss it can exceed the total.
 */
export function runtimeStatus(input: RuntimeStatusInput): RuntimeStatus {
  const live = input.pods.filter((pod) => !pod.deleting);
  const { readyPods, totalCapacity } = runtimeCapacity(input.pods, input.runsPerPod);
  let conditions: Condition[] | undefined = input.previous?.conditions?.map((c) => ({ ...c }));

  if (input.problems.length > 0) {
    const message = input.problems.join('; ');
    conditions = setCondition(
      conditions,
      { type: CONDITION_TYPES.available, status: 'False', reason: RUNTIME_REASONS.invalidSpec, message },
      input.now,
      input.generation,
    );
    conditions = setCondition(
      conditions,
      { type: CONDITION_TYPES.progressing, status: 'False', reason: RUNTIME_REASONS.invalidSpec, message },
      input.now,
      input.generation,
    );
  } else {
    conditions = setCondition(
      conditions,
      readyPods > 0
        ? {
            type: CONDITION_TYPES.available,
            status: 'True',
            reason: RUNTIME_REASONS.podsReady,
            message: `${readyPods} of ${live.length} Pods ready`,
          }
        : { type: CONDITION_TYPES.available, status: 'False', reason: RUNTIME_REASONS.noPodsReady, message: 'no Runtime Pod is ready' },
      input.now,
      input.generation,
    );
    conditions = setCondition(
      conditions,
      rolledOut(input.rollout)
        ? {
            type: CONDITION_TYPES.progressing,
            status: 'False',
            reason: RUNTIME_REASONS.rolledOut,
            message: 'every Pod runs the current spec',
          }
        : { type: CONDITION_TYPES.progressing, status: 'True', reason: RUNTIME_REASONS.rollingOut, message: rolloutMessage(input.rollout) },
      input.now,
      input.generation,
    );
  }

  conditions = setCondition(
    conditions,
    { type: CONDITION_TYPES.runsIsolated, ...RUNS_ISOLATED[input.isolation] },
    input.now,
    input.generation,
  );

  conditions =
    input.pool === undefined
      ? conditions.filter((condition) => condition.type !== CONDITION_TYPES.scaling)
      : setCondition(conditions, { type: CONDITION_TYPES.scaling, ...input.pool.condition }, input.now, input.generation);

  return {
    ...(input.generation === undefined ? {} : { observedGeneration: input.generation }),
    replicas: live.length,
    readyPods,
    totalCapacity,
    usedCapacity: input.runsHoldingCapacity,
    ...(input.pool === undefined ? {} : { desiredReplicas: input.pool.desiredReplicas }),
    pendingRuns: input.pendingRuns,
    selector: input.selector,
    runIsolation: RUN_ISOLATION_STATUS[input.isolation],
    conditions,
  };
}

const RUN_ISOLATION_STATUS: Readonly<Record<RunIsolation, RuntimeRunIsolation>> = { perRunUser: 'PerRunUser', sharedUser: 'SharedUser' };

/** Said once per Runtime, never silently: a Runtime whose Runs trust each other shows it. */
const RUNS_ISOLATED: Readonly<Record<RunIsolation, { status: ConditionStatus; reason: string; message: string }>> = {
  perRunUser: {
    status: 'True',
    reason: RUNTIME_REASONS.perRunUser,
    message: "each Run on a Pod is its own user in the Pod's user namespace, with its own directories; nothing of it outlives it",
  },
  sharedUser: {
    status: 'False',
    reason: RUNTIME_REASONS.userNamespacesOff,
    message:
      'user namespaces are off (controllerManager.runtimeUserNamespaces: false): the Runs on one Pod are one user and can read and signal each other; give untrusted code a Runtime with runs: 1, or nodes with user namespaces',
  },
};

/**
 * Ready Pods and the capacity the scheduler can bind to: ready, non-deleting Pods only,
 * each with its own capacity (`runsPerPod` when unknown). Shared by the status and the metrics.
 */
export function runtimeCapacity(
  pods: readonly RuntimePodView[],
  runsPerPod: number | undefined,
): { readyPods: number; totalCapacity: number } {
  const ready = pods.filter((pod) => !pod.deleting && pod.ready);
  const perPod = runsPerPod ?? DEFAULTS.runsPerPod;
  return { readyPods: ready.length, totalCapacity: ready.reduce((sum, pod) => sum + (pod.capacity ?? perPod), 0) };
}

/** As `kubectl rollout status`: observed, all updated, all available, no old Pods left. */
function rolledOut(rollout: RolloutView | undefined): boolean {
  if (rollout === undefined) return false;
  return (
    rollout.current &&
    rollout.observedGeneration >= rollout.generation &&
    rollout.updatedReplicas === rollout.desiredReplicas &&
    rollout.replicas === rollout.desiredReplicas &&
    rollout.availableReplicas === rollout.desiredReplicas
  );
}

function rolloutMessage(rollout: RolloutView | undefined): string {
  if (rollout === undefined) return 'creating the Deployment';
  if (!rollout.current) return 'updating the Deployment to the current spec';
  return `${rollout.updatedReplicas} of ${rollout.desiredReplicas} Pods updated, ${rollout.availableReplicas} available`;
}

/** Status equality that ignores nothing but key order: a write is made only on a change. */
export function sameStatus(a: RuntimeStatus | undefined, b: RuntimeStatus): boolean {
  return JSON.stringify(normalise(a ?? {})) === JSON.stringify(normalise(b));
}

function normalise(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalise);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
        .map(([k, v]) => [k, normalise(v)]),
    );
  }
  return value;
}

/**
 * How often at most a Runtime's status is written when only usage changed (`usedCapacity`,
 * `pendingRuns`, the counts in the Scaling condition's message): they change with every bind
 * and release, and each write is one more request to the API server while it is busiest
 * (binding a backlog). Any other change is written at once.
 */
export const USAGE_WRITE_INTERVAL_MS = 1_000;

export type StatusWriteDecision = { action: 'none' } | { action: 'write' } | { action: 'later'; afterMs: number };

/** Whether to write `next` over `previous` now, given when this process last wrote the Runtime's status. */
export function decideStatusWrite(input: {
  previous: RuntimeStatus | undefined;
  next: RuntimeStatus;
  lastWriteMs: number | undefined;
  nowMs: number;
}): StatusWriteDecision {
  const { previous, next, lastWriteMs, nowMs } = input;
  if (sameStatus(previous, next)) return { action: 'none' };
  const usageOnly = previous !== undefined && sameStatus(withUsageOf(previous, next), next);
  if (!usageOnly || lastWriteMs === undefined) return { action: 'write' };
  const afterMs = lastWriteMs + USAGE_WRITE_INTERVAL_MS - nowMs;
  return afterMs <= 0 ? { action: 'write' } : { action: 'later', afterMs };
}

/** `previous` with the usage counts of `next`: what is left to differ is not usage. */
function withUsageOf(previous: RuntimeStatus, next: RuntimeStatus): RuntimeStatus {
  const nextScaling = next.conditions?.find((condition) => condition.type === CONDITION_TYPES.scaling);
  return {
    ...previous,
    ...(next.usedCapacity === undefined ? {} : { usedCapacity: next.usedCapacity }),
    ...(next.pendingRuns === undefined ? {} : { pendingRuns: next.pendingRuns }),
    ...(previous.conditions === undefined
      ? {}
      : {
          conditions: previous.conditions.map((condition) =>
            nextScaling !== undefined &&
            condition.type === CONDITION_TYPES.scaling &&
            condition.status === nextScaling.status &&
            condition.reason === nextScaling.reason
              ? { ...condition, message: nextScaling.message }
              : condition,
          ),
        }),
  };
}
