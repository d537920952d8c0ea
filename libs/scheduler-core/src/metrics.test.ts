import { Histogram, LATENCY_BUCKETS_SECONDS, SchedulerMetrics } from './metrics.ts';

describe('Histogram', () => {
  it.each<[number[], number[]]>([
    [[], LATENCY_BUCKETS_SECONDS.map(() => 0)],
    [[0.001], LATENCY_BUCKETS_SECONDS.map(() => 1)],
    [[0.3], LATENCY_BUCKETS_SECONDS.map((bound) => (bound >= 0.3 ? 1 : 0))],
    [[120], LATENCY_BUCKETS_SECONDS.map(() => 0)],
  ])('observations %j fill cumulative buckets', (observations, counts) => {
    const histogram = new Histogram();
    for (const seconds of observations) histogram.observe(seconds);
    expect(histogram.counts).toEqual(counts);
    expect(histogram.count).toBe(observations.length);
  });
});

describe('SchedulerMetrics', () => {
  it('renders the Prometheus text format with the pending gauge summed over Runtimes', () => {
    const metrics = new SchedulerMetrics();
    metrics.pendingByRuntime.set('a/python', 2);
    metrics.pendingByRuntime.set('b/bash', 3);
    metrics.binds = 7;
    metrics.bindConflicts = 1;
    metrics.bindLatency.observe(0.02);
    const text = metrics.render();
    expect(text).toContain('# TYPE kruntimes_scheduler_pending_runs gauge\nkruntimes_scheduler_pending_runs 5\n');
    expect(text).toContain('kruntimes_scheduler_binds_total 7\n');
    expect(text).toContain('kruntimes_scheduler_bind_conflicts_total 1\n');
    expect(text).toContain('kruntimes_scheduler_bind_latency_seconds_bucket{le="0.01"} 0\n');
    expect(text).toContain('kruntimes_scheduler_bind_latency_seconds_bucket{le="0.025"} 1\n');
    expect(text).toContain('kruntimes_scheduler_bind_latency_seconds_bucket{le="+Inf"} 1\n');
    expect(text).toContain('kruntimes_scheduler_bind_latency_seconds_count 1\n');
    expect(text).toContain('# TYPE kruntimes_scheduler_pass_seconds histogram\nkruntimes_scheduler_pass_seconds_bucket{le="0.005"} 0\n');
    metrics.passDuration.observe(0.3);
    expect(metrics.render()).toContain('kruntimes_scheduler_pass_seconds_bucket{le="0.5"} 1\n');
    expect(text.endsWith('\n')).toBe(true);
    // Every sample line is `name{labels} value` or `name value`.
    for (const line of text.split('\n').filter((l) => l !== '' && !l.startsWith('#'))) {
      expect(line).toMatch(/^[a-z_]+(\{(le|namespace="[^"]+",runtime)="[^"]+"\})? [0-9.e+-]+$/);
    }
  });

  it.each<[string, [string, number][], string[]]>([
    ['no Runtime waits: the family without samples', [], []],
    [
      'one sample per waiting Runtime, sorted by key',
      [
        ['b/py', 3],
        ['a/sh', 1],
      ],
      [
        'kruntimes_scheduler_waiting_for_capacity_runs{namespace="a",runtime="sh"} 1',
        'kruntimes_scheduler_waiting_for_capacity_runs{namespace="b",runtime="py"} 3',
      ],
    ],
    [
      'a Runtime that no longer waits is dropped',
      [
        ['a/sh', 2],
        ['a/sh', 0],
      ],
      [],
    ],
  ])('renders Runs waiting for capacity per Runtime: %s', (_name, updates, samples) => {
    const metrics = new SchedulerMetrics();
    for (const [key, runs] of updates) metrics.setWaitingForCapacity(key, runs);
    const lines = metrics.render().split('\n');
    expect(lines).toContain('# TYPE kruntimes_scheduler_waiting_for_capacity_runs gauge');
    expect(lines.filter((line) => line.startsWith('kruntimes_scheduler_waiting_for_capacity_runs'))).toEqual(samples);
  });

  it.each<[string, [string, number][], string[]]>([
    ['no Runtime waits: the family without samples', [], []],
    [
      'one sample per waiting Runtime, sorted by key; a Runtime that no longer waits is dropped',
      [
        ['team-b/py', 2],
        ['team-a/sh', 1],
        ['team-a/py', 4],
        ['team-a/py', 0],
      ],
      [
        'kruntimes_scheduler_run_slot_cap_waiting_runs{namespace="team-a",runtime="sh"} 1',
        'kruntimes_scheduler_run_slot_cap_waiting_runs{namespace="team-b",runtime="py"} 2',
      ],
    ],
  ])('renders Runs waiting for their namespace run-slot cap per Runtime: %s', (_name, updates, samples) => {
    const metrics = new SchedulerMetrics();
    for (const [key, runs] of updates) metrics.setWaitingForSlotCap(key, runs);
    const lines = metrics.render().split('\n');
    expect(lines).toContain('# TYPE kruntimes_scheduler_run_slot_cap_waiting_runs gauge');
    expect(lines.filter((line) => line.startsWith('kruntimes_scheduler_run_slot_cap_waiting_runs'))).toEqual(samples);
    expect(lines.filter((line) => line.startsWith('kruntimes_scheduler_waiting_for_capacity_runs{'))).toEqual([]);
  });
});
