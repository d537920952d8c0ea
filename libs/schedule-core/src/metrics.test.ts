import { ScheduleMetrics } from './metrics.ts';

describe('ScheduleMetrics', () => {
  it('exports every family before the first series', () => {
    const text = new ScheduleMetrics().render();
    for (const family of [
      'kruntimes_schedule_runs_created_total counter',
      'kruntimes_schedule_skipped_total counter',
      'kruntimes_schedule_missed_total counter',
      'kruntimes_schedule_lateness_seconds histogram',
    ])
      expect(text).toContain(`# TYPE ${family}\n`);
    expect(text).toContain('kruntimes_schedule_lateness_seconds_count 0\n');
  });

  it('counts per namespace and schedule, and observes lateness into cumulative buckets', () => {
    const metrics = new ScheduleMetrics();
    metrics.count('b', 'nightly', 'created');
    metrics.count('a', 'hourly', 'missed', 4);
    metrics.count('a', 'hourly', 'skipped');
    metrics.count('a', 'hourly', 'missed', 0);
    metrics.observeLateness(0.2);
    metrics.observeLateness(120);
    const text = metrics.render();
    expect(text).toContain(
      'kruntimes_schedule_runs_created_total{namespace="a",schedule="hourly"} 0\nkruntimes_schedule_runs_created_total{namespace="b",schedule="nightly"} 1\n',
    );
    expect(text).toContain('kruntimes_schedule_missed_total{namespace="a",schedule="hourly"} 4\n');
    expect(text).toContain('kruntimes_schedule_skipped_total{namespace="a",schedule="hourly"} 1\n');
    expect(text).toContain('kruntimes_schedule_lateness_seconds_bucket{le="0.5"} 1\n');
    expect(text).toContain('kruntimes_schedule_lateness_seconds_bucket{le="60"} 1\n');
    expect(text).toContain('kruntimes_schedule_lateness_seconds_bucket{le="300"} 2\n');
    expect(text).toContain('kruntimes_schedule_lateness_seconds_count 2\n');
    expect(text).toContain('kruntimes_schedule_lateness_seconds_sum 120.2\n');
  });
});
