import { SecondsHistogram, histogramLines } from '@kruntimes/controller-runtime';

/**
 * stale-recovery's metrics in the Prometheus text format (0.0.4), written by hand like the
 * scheduler's: one labelled counter, one histogram, one counter.
 */
export const FENCE_WAIT_BUCKETS_SECONDS = [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800] as const;

export class RecoveryMetrics {
  /** `cause|outcome` -> count. */
  readonly #recoveries = new Map<string, number>();
  readonly #fenceWait = new SecondsHistogram(FENCE_WAIT_BUCKETS_SECONDS);
  statusWriteConflicts = 0;

  recovery(cause: string, outcome: string): void {
    const key = `${cause}|${outcome}`;
    this.#recoveries.set(key, (this.#recoveries.get(key) ?? 0) + 1);
  }

  recoveries(cause: string, outcome: string): number {
    return this.#recoveries.get(`${cause}|${outcome}`) ?? 0;
  }

  /** Time from the first suspicion of an epoch to its fence (0 when the fence came first). */
  fenceWait(seconds: number): void {
    this.#fenceWait.observe(seconds);
  }

  render(): string {
    const lines = [
      '# HELP kruntimes_recoveries_total Recovery steps taken on Runs, by what caused them and what was written.',
      '# TYPE kruntimes_recoveries_total counter',
      ...[...this.#recoveries]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([key, count]) => {
          const [cause = '', outcome = ''] = key.split('|');
          return `kruntimes_recoveries_total{cause="${cause}",outcome="${outcome}"} ${String(count)}`;
        }),
      ...histogramLines(
        'kruntimes_recovery_fence_wait_seconds',
        'Time from the first suspicion of an owner to the proof of its fence.',
        this.#fenceWait,
      ),
      '# HELP kruntimes_recovery_status_write_conflicts_total Recovery writes refused because the Run changed since it was read (409).',
      '# TYPE kruntimes_recovery_status_write_conflicts_total counter',
      `kruntimes_recovery_status_write_conflicts_total ${String(this.statusWriteConflicts)}`,
    ];
    return `${lines.join('\n')}\n`;
  }
}
