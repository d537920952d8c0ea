/**
 * The few Prometheus text-format (0.0.4) pieces the controllers' hand-written metrics need
 * (leader election, the process, the scheduler, stale-recovery, the schedule controller): a
 * histogram of seconds and a one-sample family, no labels beyond `le`.
 */
export const LEASE_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 6, 8, 10, 15, 30] as const;

export class SecondsHistogram {
  readonly bounds: readonly number[];
  /** Per bound, observations <= it (cumulative, as exposed). */
  readonly counts: number[];
  count = 0;
  sum = 0;

  constructor(bounds: readonly number[] = LEASE_BUCKETS_SECONDS) {
    this.bounds = bounds;
    this.counts = bounds.map(() => 0);
  }

  observe(seconds: number): void {
    this.count += 1;
    this.sum += seconds;
    this.bounds.forEach((bound, i) => {
      if (seconds <= bound) this.counts[i] = (this.counts[i] ?? 0) + 1;
    });
  }
}

export function histogramLines(name: string, help: string, histogram: SecondsHistogram): string[] {
  return [
    `# HELP ${name} ${help}`,
    `# TYPE ${name} histogram`,
    ...histogram.bounds.map((bound, i) => `${name}_bucket{le="${String(bound)}"} ${String(histogram.counts[i] ?? 0)}`),
    `${name}_bucket{le="+Inf"} ${String(histogram.count)}`,
    `${name}_sum ${String(histogram.sum)}`,
    `${name}_count ${String(histogram.count)}`,
  ];
}

export function sampleLines(name: string, help: string, type: 'gauge' | 'counter', value: number): string[] {
  return [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name} ${String(value)}`];
}
