import { INVOCATION_DEADLINE_MARGINS_MS, INVOCATION_HOPS, invocationDeadlineMs } from './deadlines.ts';

describe('invocation deadline margins', () => {
  it('names every hop once', () => {
    expect([...INVOCATION_HOPS].sort()).toEqual(Object.keys(INVOCATION_DEADLINE_MARGINS_MS).sort());
  });

  // At least a second between hops: the inner hop's typed answer crosses one more network hop
  // (and a loaded event loop) before the outer deadline.
  it.each(INVOCATION_HOPS.slice(0, -1).map((hop, i) => [hop, INVOCATION_HOPS[i + 1] ?? hop] as const))(
    '%s waits at least 1 s longer than %s',
    (outer, inner) => {
      expect(INVOCATION_DEADLINE_MARGINS_MS[outer] - INVOCATION_DEADLINE_MARGINS_MS[inner]).toBeGreaterThanOrEqual(1_000);
    },
  );

  it('adds the margin to the timeout', () => {
    expect(invocationDeadlineMs('runtimeServer', 2_000)).toBe(7_000);
    expect(invocationDeadlineMs('peerHop', 2_000)).toBe(12_000);
    expect(invocationDeadlineMs('gateway', 2_000)).toBe(17_000);
  });
});
