import { SecondsHistogram, histogramLines } from '@kruntimes/controller-runtime';

/** Upper bounds of the lateness histogram: from a prompt create to a catch-up hours late. */
export const LATENESS_BUCKETS_SECONDS = [0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600] as const;

type Outcome = 'created' | 'skipped' | 'missed';

const FAMILIES: Record<Outcome, { name: string; help: string }> = {
  created: {
    name: 'kruntimes_schedule_runs_created_total',
    help: 'Runs a RunSchedule created for a scheduled time (manual triggers excluded).',
  },
  skipped: {
    name: 'kruntimes_schedule_skipped_total',
    help: 'Scheduled times not run because a Run of the schedule was active (Skip, or Queue already holding one).',
  },
  missed: {
    name: 'kruntimes_schedule_missed_total',
    help: 'Scheduled times that passed with nothing to run them (controller down, suspended, past startingDeadlineSeconds).',
  },
};

const LATENESS = 'kruntimes_schedule_lateness_seconds';

/**
 * The schedule controller's metrics in the Prometheus text format (0.0.4): counters per
 * `namespace` and `schedule`, and one histogram of how late each scheduled Run was created
 * (its create minus its scheduled instant). Counted by the replica that did the write, so
 * a sum over replicas is the truth; families are exported even before the first series.
 */
export class ScheduleMetrics {
  readonly #counters = new Map<string, { namespace: string; schedule: string; counts: Record<Outcome, number> }>();
  readonly #lateness = new SecondsHistogram(LATENESS_BUCKETS_SECONDS);

  count(namespace: string, schedule: string, outcome: Outcome, by = 1): void {
    if (by <= 0) return;
    const key = `${namespace}/${schedule}`;
    let entry = this.#counters.get(key);
    if (entry === undefined) this.#counters.set(key, (entry = { namespace, schedule, counts: { created: 0, skipped: 0, missed: 0 } }));
    entry.counts[outcome] += by;
  }

  observeLateness(seconds: number): void {
    this.#lateness.observe(Math.max(0, seconds));
  }

  render(): string {
    const entries = [...this.#counters.values()].sort(
      (a, b) => a.namespace.localeCompare(b.namespace) || a.schedule.localeCompare(b.schedule),
    );
    const lines: string[] = [];
    for (const outcome of ['created', 'skipped', 'missed'] as const) {
      const { name, help } = FAMILIES[outcome];
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`);
      for (const entry of entries) lines.push(`${name}{${labels(entry.namespace, entry.schedule)}} ${entry.counts[outcome]}`);
    }
    lines.push(
      ...histogramLines(LATENESS, 'How late a scheduled Run was created: the create minus the scheduled instant.', this.#lateness),
    );
    return `${lines.join('\n')}\n`;
  }
}

function labels(namespace: string, schedule: string): string {
  // Kubernetes names need no escaping; namespace and schedule are names.
  return `namespace="${namespace}",schedule="${schedule}"`;
}
