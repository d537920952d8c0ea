import { RUN_PHASES } from '@kruntimes/api';
import type { RunPhase } from '@kruntimes/api';
import { classify, countByPhase, holdsCapacity, phaseMetricLabel } from '@kruntimes/run-state';
import { runtimeCapacity } from './runtime-status.ts';
import type { RuntimePodView } from './runtime-status.ts';

/** What the metrics read from the informer caches at scrape time (no API call). */
export interface ManagerMetricsSnapshot {
  runtimes: readonly {
    namespace: string;
    name: string;
    runsPerPod: number | undefined;
    /** spec.replicas (the autoscaler's with spec.scaling). */
    desiredPods: number;
    /** The most Pods it may have: spec.scaling.maxReplicas, or spec.replicas for a fixed pool. */
    maxPods: number;
  }[];
  runs: readonly { namespace: string; runtime: string; phase: RunPhase; cleanupPending: boolean; deleting: boolean }[];
  pods: readonly (RuntimePodView & { namespace: string; runtime: string })[];
}

/**
 * The controller-manager's metrics in the Prometheus text format (0.0.4), computed from
 * its caches at each scrape:
 *
 * | metric | type | labels |
 * |---|---|---|
 * | `kruntimes_runs` | gauge | `namespace`, `runtime`, `phase` (run-state's phaseMetricLabel; every phase, zero-filled) |
 * | `kruntimes_runtime_capacity_total` | gauge | `namespace`, `runtime`: capacity of ready, non-deleting Pods |
 * | `kruntimes_runtime_capacity_used` | gauge | `namespace`, `runtime`: Runs holding a unit (run-state's holdsCapacity) |
 * | `kruntimes_runtime_ready_pods` | gauge | `namespace`, `runtime` |
 * | `kruntimes_runtime_pods` | gauge | `namespace`, `runtime`: non-deleting Pods, ready or not (the pool's current size) |
 * | `kruntimes_runtime_desired_pods` | gauge | `namespace`, `runtime`: spec.replicas (the autoscaler's decision with spec.scaling) |
 * | `kruntimes_runtime_max_pods` | gauge | `namespace`, `runtime`: spec.scaling.maxReplicas; spec.replicas for a fixed pool |
 * | `kruntimes_runtime_pending_runs` | gauge | `namespace`, `runtime`: Runs waiting Pending for a slot (status.pendingRuns) |
 *
 * Capacity and ready Pods are the same computation as the Runtime status, so they agree
 * with `kubectl get runtime` once the status is written. Runs are counted under the
 * Runtime they name, whether it exists or not; the capacity gauges exist per cached Runtime.
 */
export function renderManagerMetrics(snapshot: ManagerMetricsSnapshot | undefined): string {
  const runs = new Map<string, { namespace: string; runtime: string; phases: RunPhase[] }>();
  const used = new Map<string, number>();
  const pending = new Map<string, number>();
  const pods = new Map<string, RuntimePodView[]>();
  for (const run of snapshot?.runs ?? []) {
    const key = labelKey(run.namespace, run.runtime);
    let entry = runs.get(key);
    if (entry === undefined) runs.set(key, (entry = { namespace: run.namespace, runtime: run.runtime, phases: [] }));
    entry.phases.push(run.phase);
    if (holdsCapacity(run.phase, run.cleanupPending)) used.set(key, (used.get(key) ?? 0) + 1);
    else if (classify(run.phase) === 'queued' && !run.deleting) pending.set(key, (pending.get(key) ?? 0) + 1);
  }
  for (const pod of snapshot?.pods ?? []) {
    const key = labelKey(pod.namespace, pod.runtime);
    pods.set(key, [...(pods.get(key) ?? []), pod]);
  }

  const lines = [
    "# HELP kruntimes_runs Runs by namespace, Runtime and phase (from the controller-manager's cache).",
    '# TYPE kruntimes_runs gauge',
  ];
  for (const entry of [...runs.values()].sort(byLabels)) {
    const counts = countByPhase(entry.phases);
    for (const phase of RUN_PHASES)
      lines.push(
        `kruntimes_runs{${labels({ namespace: entry.namespace, runtime: entry.runtime, phase: phaseMetricLabel(phase) })}} ${counts[phase]}`,
      );
  }
  const runtimes = [...(snapshot?.runtimes ?? [])].map((r) => ({ ...r, runtime: r.name })).sort(byLabels);
  const perRuntime = runtimes.map((r) => {
    const key = labelKey(r.namespace, r.runtime);
    const own = pods.get(key) ?? [];
    return {
      labels: labels({ namespace: r.namespace, runtime: r.runtime }),
      used: used.get(key) ?? 0,
      pending: pending.get(key) ?? 0,
      pods: own.filter((pod) => !pod.deleting).length,
      desiredPods: r.desiredPods,
      maxPods: r.maxPods,
      ...runtimeCapacity(own, r.runsPerPod),
    };
  });
  lines.push(
    '# HELP kruntimes_runtime_capacity_total Run capacity of the ready, non-deleting Pods of a Runtime.',
    '# TYPE kruntimes_runtime_capacity_total gauge',
  );
  for (const r of perRuntime) lines.push(`kruntimes_runtime_capacity_total{${r.labels}} ${r.totalCapacity}`);
  lines.push(
    '# HELP kruntimes_runtime_capacity_used Runs of a Runtime that hold a unit of capacity (may exceed the total during a roll or a Pod loss).',
    '# TYPE kruntimes_runtime_capacity_used gauge',
  );
  for (const r of perRuntime) lines.push(`kruntimes_runtime_capacity_used{${r.labels}} ${r.used}`);
  lines.push('# HELP kruntimes_runtime_ready_pods Ready, non-deleting Pods of a Runtime.', '# TYPE kruntimes_runtime_ready_pods gauge');
  for (const r of perRuntime) lines.push(`kruntimes_runtime_ready_pods{${r.labels}} ${r.readyPods}`);
  lines.push('# HELP kruntimes_runtime_pods Non-deleting Pods of a Runtime, ready or not.', '# TYPE kruntimes_runtime_pods gauge');
  for (const r of perRuntime) lines.push(`kruntimes_runtime_pods{${r.labels}} ${r.pods}`);
  lines.push(
    "# HELP kruntimes_runtime_desired_pods A Runtime's spec.replicas (the autoscaler's decision with spec.scaling).",
    '# TYPE kruntimes_runtime_desired_pods gauge',
  );
  for (const r of perRuntime) lines.push(`kruntimes_runtime_desired_pods{${r.labels}} ${r.desiredPods}`);
  lines.push(
    '# HELP kruntimes_runtime_max_pods The most Pods a Runtime may have: spec.scaling.maxReplicas, or spec.replicas for a fixed pool.',
    '# TYPE kruntimes_runtime_max_pods gauge',
  );
  for (const r of perRuntime) lines.push(`kruntimes_runtime_max_pods{${r.labels}} ${r.maxPods}`);
  lines.push(
    '# HELP kruntimes_runtime_pending_runs Runs of a Runtime waiting Pending for a slot.',
    '# TYPE kruntimes_runtime_pending_runs gauge',
  );
  for (const r of perRuntime) lines.push(`kruntimes_runtime_pending_runs{${r.labels}} ${r.pending}`);
  return `${lines.join('\n')}\n`;
}

/**
 * Where the running ControllerManager plugs its caches in: the endpoint starts before
 * leader election, and a replica that does not lead exports the families without series.
 */
export class ManagerMetrics {
  #source: (() => ManagerMetricsSnapshot) | undefined;

  /** Set by the ControllerManager while it runs; undefined when it stops. */
  observe(source: (() => ManagerMetricsSnapshot) | undefined): void {
    this.#source = source;
  }

  render(): string {
    return renderManagerMetrics(this.#source?.());
  }
}

function labelKey(namespace: string, runtime: string): string {
  return `${namespace}/${runtime}`;
}

function byLabels(a: { namespace: string; runtime: string }, b: { namespace: string; runtime: string }): number {
  return a.namespace.localeCompare(b.namespace) || a.runtime.localeCompare(b.runtime);
}

function labels(values: Record<string, string>): string {
  return Object.entries(values)
    .map(([name, value]) => `${name}="${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')}"`)
    .join(',');
}
