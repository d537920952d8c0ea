import { LeaderElectionMetrics } from './leader-election-metrics.ts';
import { ProcessMetrics, renderProcessMetrics } from './process-metrics.ts';
import type { DelayHistogram } from './process-metrics.ts';
import { SecondsHistogram, histogramLines } from './prometheus-text.ts';

describe('SecondsHistogram', () => {
  it.each([
    ['nothing observed', [], [0, 0, 0], 0],
    ['on a bound counts in that bucket', [1], [0, 1, 1], 1],
    ['between bounds', [0.3, 1.5], [0, 1, 2], 2],
    ['above the last bound: only +Inf', [9], [0, 0, 0], 1],
  ])('%s', (_name, observed, buckets, count) => {
    const histogram = new SecondsHistogram([0.1, 1, 2]);
    for (const seconds of observed) histogram.observe(seconds);
    const lines = histogramLines('x_seconds', 'help', histogram);
    expect(lines.slice(2, 5)).toEqual(buckets.map((n, i) => `x_seconds_bucket{le="${String([0.1, 1, 2][i])}"} ${String(n)}`));
    expect(lines).toContain(`x_seconds_bucket{le="+Inf"} ${String(count)}`);
    expect(lines).toContain(`x_seconds_count ${String(count)}`);
  });
});

describe('LeaderElectionMetrics', () => {
  it('renders the leading gauge, both renewal histograms and the failures', () => {
    const metrics = new LeaderElectionMetrics();
    metrics.leading = true;
    metrics.renew.observe(0.02);
    metrics.lateness.observe(3);
    metrics.renewFailures = 2;
    const text = metrics.render();
    expect(text).toContain('kruntimes_leader_is_leader 1\n');
    expect(text).toContain('kruntimes_leader_renew_seconds_bucket{le="0.025"} 1\n');
    expect(text).toContain('kruntimes_leader_renew_lateness_seconds_bucket{le="2"} 0\n');
    expect(text).toContain('kruntimes_leader_renew_lateness_seconds_bucket{le="4"} 1\n');
    expect(text).toContain('kruntimes_leader_renew_failures_total 2\n');
    expect(text.endsWith('\n')).toBe(true);
  });
});

describe('renderProcessMetrics', () => {
  it.each([
    [{ heapUsedBytes: 0, heapLiveBytes: 0, residentBytes: 0, eventLoopDelayP99Seconds: 0 }, ['0', '0', '0', '0']],
    [
      { heapUsedBytes: 12_345_678, heapLiveBytes: 2_345_678, residentBytes: 98_765_432, eventLoopDelayP99Seconds: 0.25 },
      ['12345678', '2345678', '98765432', '0.25'],
    ],
  ])('%j', (sample, values) => {
    const text = renderProcessMetrics(sample);
    const names = [
      'kruntimes_process_heap_used_bytes',
      'kruntimes_process_heap_live_bytes',
      'kruntimes_process_resident_bytes',
      'kruntimes_process_event_loop_delay_p99_seconds',
    ];
    names.forEach((name, i) => {
      expect(text).toContain(`# TYPE ${name} gauge\n${name} ${values[i] ?? ''}\n`);
    });
  });
});

describe('ProcessMetrics', () => {
  /** A delay histogram whose p99 the test sets (ms), counting resets. */
  function fakeDelay(): DelayHistogram & { p99Ms: number; resets: number } {
    return {
      p99Ms: 0,
      resets: 0,
      get count() {
        return this.p99Ms > 0 ? 1 : 0;
      },
      percentile() {
        return this.p99Ms * 1e6;
      },
      reset() {
        this.resets += 1;
        this.p99Ms = 0;
      },
    };
  }

  // Each step: at time t (ms) the current window's p99 is set, then sampled.
  it.each([
    ['within the first window: the current p99', [[10_000, 50]], [0.05], 0],
    [
      'a closed window still counts in the next one, the larger of both is reported',
      [
        [29_000, 200],
        [30_000, 200],
        [40_000, 20],
      ],
      [0.2, 0.2, 0.2],
      1,
    ],
    [
      'two windows later a stall is forgotten',
      [
        [30_000, 200],
        [60_000, 20],
        [70_000, 30],
      ],
      [0.2, 0.2, 0.03],
      2,
    ],
  ])('%s', (_name, steps, expected, resets) => {
    let now = 0;
    const delay = fakeDelay();
    const metrics = new ProcessMetrics({ now: () => now, delay, memory: () => ({ heapUsed: 1, rss: 2 }) });
    const seen = steps.map(([at = 0, p99Ms = 0]) => {
      now = at;
      delay.p99Ms = p99Ms;
      return metrics.sample().eventLoopDelayP99Seconds;
    });
    expect(seen).toEqual(expected);
    expect(delay.resets).toBe(resets);
    expect(metrics.sample()).toMatchObject({ heapUsedBytes: 1, residentBytes: 2 });
  });

  it.each<[string, number | undefined, number]>([
    ['before any full collection: the heap in use', undefined, 1],
    ['after one: the heap in use as that collection left it', 7, 7],
  ])('live heap %s', (_name, live, expected) => {
    const metrics = new ProcessMetrics({ delay: fakeDelay(), memory: () => ({ heapUsed: 1, rss: 2 }), liveHeap: () => live });
    expect(metrics.sample().heapLiveBytes).toBe(expected);
  });

  it("measures this process by default (perf_hooks' monitor, process.memoryUsage)", () => {
    const sample = new ProcessMetrics().sample();
    expect(sample.heapUsedBytes).toBeGreaterThan(0);
    expect(sample.residentBytes).toBeGreaterThan(sample.heapUsedBytes);
  });
});
