import {
  apiServerRequestDelta,
  formatApiServerRequestDelta,
  formatLatencies,
  parseApiServerRequests,
  percentile,
  summarizeLatencies,
} from './bench.ts';

describe('percentile (nearest rank)', () => {
  const hundred = Array.from({ length: 100 }, (_, i) => 100 - i); // 100..1, unsorted on purpose
  test.each([
    ['p50 of 1..100', hundred, 0.5, 50],
    ['p99 of 1..100', hundred, 0.99, 99],
    ['p100 of 1..100', hundred, 1, 100],
    ['p1 of 1..100', hundred, 0.01, 1],
    ['p50 of an even pair is the lower', [2, 1], 0.5, 1],
    ['p50 of three is the middle', [3, 1, 2], 0.5, 2],
    ['p99 of 30 samples is the max', Array.from({ length: 30 }, (_, i) => i), 0.99, 29],
    ['one sample is every percentile', [7], 0.01, 7],
  ])('%s', (_, samples, p, expected) => {
    expect(percentile(samples, p)).toBe(expected);
  });

  test('no samples: NaN', () => {
    expect(percentile([], 0.5)).toBeNaN();
  });

  test.each([0, -0.5, 1.5, Number.NaN])('p = %p is refused', (p) => {
    expect(() => percentile([1], p)).toThrow(RangeError);
  });

  test('does not reorder the caller’s samples', () => {
    const samples = [3, 1, 2];
    percentile(samples, 0.5);
    expect(samples).toEqual([3, 1, 2]);
  });
});

describe('formatLatencies', () => {
  test('100 samples or more: p50, p99 and max', () => {
    const summary = summarizeLatencies(Array.from({ length: 200 }, (_, i) => i + 1));
    expect(formatLatencies(summary)).toBe('p50 100.00 ms, p99 198.00 ms, max 200.00 ms');
  });
  test('fewer: a p99 would be the max, so only the max is printed', () => {
    expect(formatLatencies(summarizeLatencies([1, 2, 3]), 0)).toBe('p50 2 ms, max 3 ms (3 samples)');
  });
});

describe('apiserver_request_total', () => {
  const exposition = (leases: number, runs: number): string =>
    [
      '# HELP apiserver_request_total [STABLE] Counter of apiserver requests',
      '# TYPE apiserver_request_total counter',
      `apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} ${leases}`,
      `apiserver_request_total{code="200",component="apiserver",dry_run="",group="kruntimes.io",resource="runs",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} ${runs}`,
      `apiserver_request_total{code="409",component="apiserver",dry_run="",group="kruntimes.io",resource="runs",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 1`,
      'apiserver_request_duration_seconds_count{verb="PUT"} 3',
    ].join('\n');

  test('sums codes per verb and resource', () => {
    expect([...parseApiServerRequests(exposition(4, 2))]).toEqual([
      ['PUT leases', 4],
      ['PATCH runs/status', 3],
    ]);
  });

  test('the delta lists what grew, largest first', () => {
    const delta = apiServerRequestDelta(parseApiServerRequests(exposition(4, 2)), parseApiServerRequests(exposition(12, 3)));
    expect(delta).toEqual({
      total: 9,
      byKind: [
        ['PUT leases', 8],
        ['PATCH runs/status', 1],
      ],
    });
    expect(formatApiServerRequestDelta(delta)).toBe('9 (8 PUT leases, 1 PATCH runs/status)');
  });

  test('no change: 0', () => {
    const same = parseApiServerRequests(exposition(4, 2));
    expect(formatApiServerRequestDelta(apiServerRequestDelta(same, same))).toBe('0');
  });
});
