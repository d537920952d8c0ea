import { SecondsHistogram, histogramLines } from '@kruntimes/controller-runtime';

/**
 * The scheduler's metrics in the Prometheus text format (0.0.4). A dozen lines of
 * exposition instead of a metrics dependency: a few series, no labels beyond `le`, except
 * the Runtime of Runs waiting for capacity or for their namespace's run-slot cap (namespace
 * and name are DNS labels: nothing to escape).
 */
export const LATENCY_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60] as const;

/** A histogram of seconds over LATENCY_BUCKETS_SECONDS. */
export class Histogram extends SecondsHistogram {
  constructor() {
    super(LATENCY_BUCKETS_SECONDS);
  }
}

export class SchedulerMetrics {
  /** Pending Runs not bound by the last pass, per Runtime key (summed on export). */
  readonly pendingByRuntime = new Map<string, number>();
  /** Runs waiting WaitingForCapacity (spec.scaling set) after the last pass, per Runtime key; only Runtimes with some. */
  readonly waitingByRuntime = new Map<string, number>();
  /** Runs waiting RunSlotCapReached (their namespace's run-slot cap) after the last pass, per Runtime key; only Runtimes with some. */
  readonly slotCapWaitingByRuntime = new Map<string, number>();
  /** Creation of the Run -> successful bind write. */
  readonly bindLatency = new Histogram();
  /** The bind status write alone. */
  readonly bindWrite = new Histogram();
  /** One placement pass over a Runtime, its writes included (waiting reasons are written beside it). */
  readonly passDuration = new Histogram();
  bindConflicts = 0;
  binds = 0;
  /** Placement passes run: flat while nothing changes (no polling). */
  passes = 0;

  setWaitingForCapacity(runtimeKey: string, runs: number): void {
    setOrDrop(this.waitingByRuntime, runtimeKey, runs);
  }

  setWaitingForSlotCap(runtimeKey: string, runs: number): void {
    setOrDrop(this.slotCapWaitingByRuntime, runtimeKey, runs);
  }

  render(): string {
    const pending = [...this.pendingByRuntime.values()].reduce((a, b) => a + b, 0);
    const lines = [
      '# HELP kruntimes_scheduler_pending_runs Pending Runs the scheduler could not bind yet.',
      '# TYPE kruntimes_scheduler_pending_runs gauge',
      `kruntimes_scheduler_pending_runs ${pending}`,
      '# HELP kruntimes_scheduler_waiting_for_capacity_runs Pending Runs of a Runtime with spec.scaling that wait for a free slot (WaitingForCapacity).',
      '# TYPE kruntimes_scheduler_waiting_for_capacity_runs gauge',
      ...perRuntime('kruntimes_scheduler_waiting_for_capacity_runs', this.waitingByRuntime),
      '# HELP kruntimes_scheduler_run_slot_cap_waiting_runs Pending Runs that wait because their namespace holds all the run slots its kruntimes.io/run-slots cap allows (RunSlotCapReached).',
      '# TYPE kruntimes_scheduler_run_slot_cap_waiting_runs gauge',
      ...perRuntime('kruntimes_scheduler_run_slot_cap_waiting_runs', this.slotCapWaitingByRuntime),
      '# HELP kruntimes_scheduler_binds_total Runs bound to a Pod.',
      '# TYPE kruntimes_scheduler_binds_total counter',
      `kruntimes_scheduler_binds_total ${this.binds}`,
      '# HELP kruntimes_scheduler_bind_conflicts_total Bind writes refused because the Run changed since it was read (409).',
      '# TYPE kruntimes_scheduler_bind_conflicts_total counter',
      `kruntimes_scheduler_bind_conflicts_total ${this.bindConflicts}`,
      '# HELP kruntimes_scheduler_passes_total Placement passes over one Runtime.',
      '# TYPE kruntimes_scheduler_passes_total counter',
      `kruntimes_scheduler_passes_total ${this.passes}`,
      ...histogramLines('kruntimes_scheduler_bind_latency_seconds', "Time from a Run's creation to its successful bind.", this.bindLatency),
      ...histogramLines('kruntimes_scheduler_bind_write_seconds', 'Duration of the fenced bind status write.', this.bindWrite),
      ...histogramLines(
        'kruntimes_scheduler_pass_seconds',
        'Duration of one placement pass over a Runtime, its bind writes included.',
        this.passDuration,
      ),
    ];
    return `${lines.join('\n')}\n`;
  }
}

function setOrDrop(byRuntime: Map<string, number>, runtimeKey: string, runs: number): void {
  if (runs > 0) byRuntime.set(runtimeKey, runs);
  else byRuntime.delete(runtimeKey);
}

/** One sample per Runtime key, sorted by key. */
function perRuntime(name: string, byRuntime: ReadonlyMap<string, number>): string[] {
  return [...byRuntime]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([runtimeKey, runs]) => {
      const [namespace = '', runtime = ''] = runtimeKey.split('/');
      return `${name}{namespace="${namespace}",runtime="${runtime}"} ${runs}`;
    });
}
