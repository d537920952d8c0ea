import { DELETION_COST, MARK_SETTLE_MS, decidePool, fixedPoolAnnotations, isForeignMark, markedAtMs } from './decide-pool.ts';
import type { PoolInput, PoolPod } from './decide-pool.ts';

const NOW = Date.parse('2026-12-06T10:00:00Z');
const DELAY_MS = 30_000;

function pod(name: string, extra: Partial<PoolPod> = {}): PoolPod {
  return { name, held: 0, ready: true, deleting: false, markedAtMs: undefined, foreignMark: false, deletionCost: undefined, ...extra };
}

/** Marked long enough ago to be confirmed, with the marked cost. */
function marked(name: string, extra: Partial<PoolPod> = {}): PoolPod {
  return pod(name, { markedAtMs: NOW - MARK_SETTLE_MS, deletionCost: DELETION_COST.marked, ...extra });
}

function busy(name: string, held: number, extra: Partial<PoolPod> = {}): PoolPod {
  return pod(name, { held, deletionCost: DELETION_COST.busy, ...extra });
}

function input(extra: Partial<PoolInput>): PoolInput {
  return {
    scaling: { minReplicas: 1, maxReplicas: 8, spareRuns: 0, scaleDownDelaySeconds: DELAY_MS / 1000 },
    runsPerPod: 4,
    specReplicas: 1,
    lastWritten: 1,
    demand: { held: 0, pending: 0 },
    pods: [pod('a')],
    lowerSinceMs: undefined,
    nowMs: NOW,
    ...extra,
  };
}

/** Long enough lower for the delay to have passed. */
const LOWER_LONG_AGO = NOW - DELAY_MS;

describe('decidePool: up', () => {
  it('raises spec.replicas at once for Pending Runs', () => {
    const decision = decidePool(input({ demand: { held: 4, pending: 12 }, pods: [busy('a', 4)] }));
    expect(decision.desiredReplicas).toBe(4);
    expect(decision.change).toMatchObject({ replicas: 4, reason: 'ScaledUp' });
    expect(decision.change?.message).toMatch(/^12 Runs waiting: 1 -> 4 Pods/);
    expect(decision.condition).toMatchObject({ status: 'True', reason: 'ScaledUp' });
    expect(decision.overridden).toBeUndefined();
    expect(decision.requeueAfterMs).toBeUndefined();
  });

  it('scales from zero: one Pending Run at 0 Pods starts one', () => {
    const decision = decidePool(
      input({
        scaling: { minReplicas: 0, maxReplicas: 2, spareRuns: 0, scaleDownDelaySeconds: 30 },
        specReplicas: 0,
        lastWritten: 0,
        demand: { held: 0, pending: 1 },
        pods: [],
      }),
    );
    expect(decision.change?.replicas).toBe(1);
    expect(decision.condition.message).toMatch(/^1 Runs waiting: 0 -> 1 Pods/);
  });

  it('rises to the maximum and says so', () => {
    const decision = decidePool(input({ demand: { held: 4, pending: 100 }, pods: [busy('a', 4)] }));
    expect(decision.change?.replicas).toBe(8);
    expect(decision.condition).toMatchObject({ status: 'True', reason: 'AtMaximum' });
    expect(decision.condition.message).toContain('26 Pods needed, at the maximum of 8');
  });

  it('at the maximum already: AtMaximum, not scaling', () => {
    const decision = decidePool(input({ specReplicas: 8, lastWritten: 8, demand: { held: 32, pending: 10 }, pods: [] }));
    expect(decision.change).toBeUndefined();
    expect(decision.condition).toMatchObject({ status: 'False', reason: 'AtMaximum' });
  });

  it('keeps saying ScaledUp while the new Pods start and Runs wait', () => {
    const decision = decidePool(
      input({ specReplicas: 2, lastWritten: 2, demand: { held: 4, pending: 3 }, pods: [busy('a', 4), pod('b', { ready: false })] }),
    );
    expect(decision.change).toBeUndefined();
    expect(decision.condition).toMatchObject({ status: 'True', reason: 'ScaledUp' });
    expect(decision.condition.message).toMatch(/^3 Runs waiting: 1 of 2 Pods ready/);
  });

  it('steady when the Pods fit the demand', () => {
    const decision = decidePool(
      input({ specReplicas: 2, lastWritten: 2, demand: { held: 5, pending: 0 }, pods: [busy('a', 4), busy('b', 1)] }),
    );
    expect(decision).toMatchObject({ change: undefined, pods: [], lowerSinceMs: undefined, requeueAfterMs: undefined });
    expect(decision.condition).toEqual({ status: 'False', reason: 'Steady', message: '2 Pods for 5 held, 0 waiting, 4 per Pod' });
  });

  it('spare slots keep room beyond demand', () => {
    const decision = decidePool(
      input({
        scaling: { minReplicas: 1, maxReplicas: 8, spareRuns: 2, scaleDownDelaySeconds: 30 },
        demand: { held: 3, pending: 0 },
        pods: [busy('a', 3)],
      }),
    );
    expect(decision.change?.replicas).toBe(2);
    expect(decision.condition.message).toBe('1 -> 2 Pods (3 held, 0 waiting, 2 spare, 4 per Pod)');
  });

  it('unmarks Pods that are needed again and resets the lower time', () => {
    const decision = decidePool(
      input({
        specReplicas: 2,
        lastWritten: 2,
        demand: { held: 4, pending: 4 },
        pods: [busy('a', 4), marked('b')],
        lowerSinceMs: LOWER_LONG_AGO,
      }),
    );
    expect(decision.pods).toEqual([{ pod: 'b', scaleDown: null, deletionCost: null }]);
    expect(decision.lowerSinceMs).toBeUndefined();
  });

  it('keeps the marks of Pods a previous shrink let go while the ReplicaSet removes them', () => {
    const decision = decidePool(
      input({
        specReplicas: 1,
        lastWritten: 1,
        demand: { held: 1, pending: 0 },
        pods: [busy('a', 1), marked('b'), pod('c', { markedAtMs: NOW })],
      }),
    );
    // b and c are both beyond spec.replicas 1; both stay marked.
    expect(decision.pods).toEqual([{ pod: 'c', deletionCost: DELETION_COST.marked }]);
  });

  it('sets the busy cost on a Pod that got Runs and removes it from one that emptied', () => {
    const decision = decidePool(
      input({
        specReplicas: 2,
        lastWritten: 2,
        demand: { held: 4, pending: 0 },
        pods: [pod('a', { held: 4 }), pod('b', { deletionCost: DELETION_COST.busy })],
      }),
    );
    expect(decision.pods).toEqual([
      { pod: 'a', deletionCost: DELETION_COST.busy },
      { pod: 'b', deletionCost: null },
    ]);
  });
});

describe('decidePool: down', () => {
  const three = [busy('a', 2), pod('b'), pod('c')];

  it('waits for the delay first, and says how long', () => {
    const decision = decidePool(input({ specReplicas: 3, lastWritten: 3, demand: { held: 2, pending: 0 }, pods: three }));
    expect(decision).toMatchObject({ change: undefined, lowerSinceMs: NOW, requeueAfterMs: DELAY_MS });
    expect(decision.condition).toEqual({
      status: 'True',
      reason: 'ScaleDownDelayed',
      message: '1 of 3 Pods needed (2 held, 0 waiting, 4 per Pod); empty Pods go from 2026-12-06T10:00:30Z',
    });
    expect(decision.pods).toEqual([]);
  });

  it('keeps counting from when demand first went lower', () => {
    const decision = decidePool(
      input({ specReplicas: 3, lastWritten: 3, demand: { held: 2, pending: 0 }, pods: three, lowerSinceMs: NOW - 20_000 }),
    );
    expect(decision).toMatchObject({ lowerSinceMs: NOW - 20_000, requeueAfterMs: 10_000 });
  });

  it('after the delay marks the empty Pods first, not yet shrinking', () => {
    const decision = decidePool(
      input({ specReplicas: 3, lastWritten: 3, demand: { held: 2, pending: 0 }, pods: three, lowerSinceMs: LOWER_LONG_AGO }),
    );
    expect(decision.change).toBeUndefined();
    const mark = new Date(NOW).toISOString();
    expect(decision.pods).toEqual([
      { pod: 'b', scaleDown: mark, deletionCost: DELETION_COST.marked },
      { pod: 'c', scaleDown: mark, deletionCost: DELETION_COST.marked },
    ]);
    expect(decision.condition.message).toMatch(/2 empty Pods marked, removed once they stay empty$/);
    expect(decision.requeueAfterMs).toBe(MARK_SETTLE_MS);
  });

  it('shrinks by the marked Pods confirmed still empty', () => {
    const decision = decidePool(
      input({
        specReplicas: 3,
        lastWritten: 3,
        demand: { held: 2, pending: 0 },
        pods: [busy('a', 2), marked('b'), marked('c')],
        lowerSinceMs: LOWER_LONG_AGO,
      }),
    );
    expect(decision.change).toMatchObject({ replicas: 1, reason: 'ScaledDown' });
    expect(decision.change?.message).toMatch(/^3 -> 1 Pods, only empty ones removed/);
    expect(decision.condition).toMatchObject({ status: 'True', reason: 'ScaledDown' });
    expect(decision.pods).toEqual([]);
  });

  it('shrinks only by the confirmed marks while others settle', () => {
    const decision = decidePool(
      input({
        specReplicas: 3,
        lastWritten: 3,
        demand: { held: 2, pending: 0 },
        pods: [busy('a', 2), marked('b'), pod('c', { markedAtMs: NOW - 500, deletionCost: DELETION_COST.marked })],
        lowerSinceMs: LOWER_LONG_AGO,
      }),
    );
    expect(decision.change?.replicas).toBe(2);
    expect(decision.requeueAfterMs).toBe(MARK_SETTLE_MS - 500);
  });

  it('unmarks a marked Pod that got a Run and keeps its replicas', () => {
    const decision = decidePool(
      input({
        specReplicas: 2,
        lastWritten: 2,
        demand: { held: 3, pending: 0 },
        pods: [busy('a', 2), marked('b', { held: 1 })],
        lowerSinceMs: LOWER_LONG_AGO,
      }),
    );
    expect(decision.change).toBeUndefined();
    expect(decision.pods).toEqual([{ pod: 'b', scaleDown: null, deletionCost: DELETION_COST.busy }]);
    expect(decision.condition.message).toMatch(/1 of the 1 Pods to remove still hold Runs$/);
  });

  it('removes only as many as are empty when fewer are', () => {
    const decision = decidePool(
      input({
        specReplicas: 3,
        lastWritten: 3,
        demand: { held: 3, pending: 0 },
        pods: [busy('a', 2), busy('b', 1), marked('c')],
        lowerSinceMs: LOWER_LONG_AGO,
      }),
    );
    expect(decision.change?.replicas).toBe(2);
  });

  it('does not shrink while an unmarked Pod is not ready (the ReplicaSet would remove it first)', () => {
    const decision = decidePool(
      input({
        runsPerPod: 1,
        specReplicas: 3,
        lastWritten: 3,
        demand: { held: 2, pending: 0 },
        pods: [busy('a', 1), busy('b', 1, { ready: false }), marked('c')],
        lowerSinceMs: LOWER_LONG_AGO,
      }),
    );
    expect(decision.change).toBeUndefined();
    expect(decision.condition.message).toMatch(/1 Pods not ready yet$/);
  });

  it('prefers an empty Pod that is not ready', () => {
    const decision = decidePool(
      input({
        specReplicas: 3,
        lastWritten: 3,
        demand: { held: 5, pending: 0 },
        pods: [busy('a', 1), pod('b'), pod('c', { ready: false })],
        lowerSinceMs: LOWER_LONG_AGO,
      }),
    );
    expect(decision.pods.filter((change) => typeof change.scaleDown === 'string').map((change) => change.pod)).toEqual(['c']);
  });

  it('does not shrink again for marked Pods the ReplicaSet is already removing', () => {
    // spec.replicas went 3 -> 2 for b; b is still there; demand now needs 1: c is marked next, not counted twice.
    const decision = decidePool(
      input({
        specReplicas: 2,
        lastWritten: 2,
        demand: { held: 1, pending: 0 },
        pods: [busy('a', 1), marked('b'), marked('c')],
        lowerSinceMs: LOWER_LONG_AGO,
      }),
    );
    expect(decision.change?.replicas).toBe(1);
    const again = decidePool(
      input({
        specReplicas: 1,
        lastWritten: 1,
        demand: { held: 1, pending: 0 },
        pods: [busy('a', 1), marked('b'), marked('c')],
        lowerSinceMs: LOWER_LONG_AGO,
      }),
    );
    expect(again.change).toBeUndefined();
    expect(again.pods).toEqual([]);
  });

  it('ignores Pods being deleted', () => {
    const decision = decidePool(
      input({
        specReplicas: 2,
        lastWritten: 2,
        demand: { held: 1, pending: 0 },
        pods: [busy('a', 1), marked('b', { deleting: true }), pod('c')],
        lowerSinceMs: LOWER_LONG_AGO,
      }),
    );
    expect(decision.pods).toEqual([{ pod: 'c', scaleDown: new Date(NOW).toISOString(), deletionCost: DELETION_COST.marked }]);
  });

  it('goes down to zero with minReplicas 0', () => {
    const decision = decidePool(
      input({
        scaling: { minReplicas: 0, maxReplicas: 2, spareRuns: 0, scaleDownDelaySeconds: 30 },
        pods: [marked('a')],
        lowerSinceMs: LOWER_LONG_AGO,
      }),
    );
    expect(decision.change?.replicas).toBe(0);
  });
});

describe('decidePool: spec.replicas changed by someone else', () => {
  it('a lower value is put back at once, with the Warning', () => {
    const decision = decidePool(input({ specReplicas: 1, lastWritten: 3, demand: { held: 10, pending: 0 }, pods: [busy('a', 4)] }));
    expect(decision.overridden).toMatchObject({ from: 3, to: 1 });
    expect(decision.overridden?.message).toContain('set to 1 by someone else');
    expect(decision.change?.replicas).toBe(3);
  });

  it('a higher value goes back through marking empty Pods, without the delay', () => {
    const decision = decidePool(
      input({ specReplicas: 3, lastWritten: 1, demand: { held: 1, pending: 0 }, pods: [busy('a', 1), pod('b'), pod('c')] }),
    );
    expect(decision.overridden?.message).toMatch(/back to 1 as its empty Pods are removed$/);
    expect(decision.lowerSinceMs).toBe(NOW - DELAY_MS);
    expect(decision.pods.filter((change) => typeof change.scaleDown === 'string')).toHaveLength(2);
  });

  it('nothing is overridden when no earlier write is known', () => {
    expect(decidePool(input({ specReplicas: 3, lastWritten: undefined, pods: [pod('a')] })).overridden).toBeUndefined();
  });
});

describe('fixedPoolAnnotations', () => {
  it.each<[string, PoolPod, unknown[]]>([
    ['a marked Pod: mark and cost go', marked('a'), [{ pod: 'a', scaleDown: null, deletionCost: null }]],
    ['a marked Pod that holds a Run: busy', marked('a', { held: 1 }), [{ pod: 'a', scaleDown: null, deletionCost: DELETION_COST.busy }]],
    ['a busy Pod with its cost: nothing', busy('b', 1), []],
    ['a busy Pod without a cost: busy', pod('b', { held: 2 }), [{ pod: 'b', deletionCost: DELETION_COST.busy }]],
    ['a Pod that emptied: its cost goes', pod('c', { deletionCost: DELETION_COST.busy }), [{ pod: 'c', deletionCost: null }]],
    ['an empty Pod: nothing', pod('d'), []],
    ["someone else's cost: left alone", pod('e', { held: 1, deletionCost: '100' }), []],
    ["a marked Pod with someone else's cost: the mark only", marked('f', { deletionCost: '7' }), [{ pod: 'f', scaleDown: null }]],
    ['a deleting Pod: nothing', marked('g', { deleting: true }), []],
    ['a mark someone else set: left alone', marked('h', { foreignMark: true, deletionCost: undefined }), []],
  ])('%s', (_, subject, expected) => {
    expect(fixedPoolAnnotations([subject])).toEqual(expected);
  });
});

describe('isForeignMark', () => {
  it.each<[string | undefined, boolean]>([
    [undefined, false],
    ['2026-12-06T10:00:00.000Z', false],
    ['true', true],
  ])('%s', (value, expected) => {
    expect(isForeignMark(value)).toBe(expected);
  });
});

describe('markedAtMs', () => {
  it.each<[string | undefined, number | undefined]>([
    [undefined, undefined],
    ['2026-12-06T10:00:00.000Z', NOW],
    ['yes', 0],
  ])('%s', (value, expected) => {
    expect(markedAtMs(value)).toBe(expected);
  });
});
