import { PerKeyInterval } from './per-key-interval.ts';

test.each<[string, [string, number][], boolean[]]>([
  ['the first report of a Run', [['a', 0]], [true]],
  [
    'again within 30 s',
    [
      ['a', 0],
      ['a', 29_999],
    ],
    [true, false],
  ],
  [
    'again after 30 s',
    [
      ['a', 0],
      ['a', 30_000],
    ],
    [true, true],
  ],
  [
    'a burst is one',
    [
      ['a', 0],
      ['a', 1],
      ['a', 2],
      ['a', 3],
    ],
    [true, false, false, false],
  ],
  [
    'other Runs are independent',
    [
      ['a', 0],
      ['b', 1],
      ['a', 2],
    ],
    [true, true, false],
  ],
  [
    'the interval counts from the last allowed report',
    [
      ['a', 0],
      ['a', 20_000],
      ['a', 30_000],
      ['a', 50_000],
    ],
    [true, false, true, false],
  ],
])('%s', (_name, calls, expected) => {
  const limit = new PerKeyInterval(30_000);
  expect(calls.map(([key, at]) => limit.allow(key, at))).toEqual(expected);
});

test('expired keys are pruned: memory stays bounded', () => {
  const limit = new PerKeyInterval(30_000);
  for (let i = 0; i < 5_000; i += 1) limit.allow(`run-${i}`, i * 100);
  // Only keys of the last 30 s (300 of them) plus at most one prune period's growth remain.
  expect(limit.size).toBeLessThanOrEqual(1_025);
});
