import { REGISTRATION_CLEANUP_FINALIZER } from '@kruntimes/api';
import type { RunPhase } from '@kruntimes/api';
import { ClaimSlots, decideClaim, podHolders } from './claim-slots.ts';
import type { ClaimInFlight, SlotRun } from './claim-slots.ts';

const POD = 'pod-uid-here';
const OTHER_POD = 'pod-uid-other';

function run(
  uid: string,
  phase: RunPhase | undefined,
  pod: string | undefined,
  extra: { attempt?: number; finalizer?: boolean } = {},
): SlotRun {
  return {
    metadata: { uid, name: `run-${uid}`, ...(extra.finalizer === true ? { finalizers: [REGISTRATION_CLEANUP_FINALIZER] } : {}) },
    status: {
      ...(phase === undefined ? {} : { phase }),
      ...(pod === undefined ? {} : { assignedPodUID: pod }),
      attempt: extra.attempt ?? 1,
    },
  };
}

describe('podHolders', () => {
  // [name, runs, claims in flight, claimed holders, in-flight holders, settled]
  const cases: [string, SlotRun[], ClaimInFlight[], string[], string[], string[]][] = [
    ['nothing on the Pod', [run('a', 'Pending', undefined), run('b', 'Running', OTHER_POD)], [], [], [], []],
    ['Running and Ready hold a claimed unit', [run('a', 'Running', POD), run('b', 'Ready', POD)], [], ['a', 'b'], [], []],
    ['a Run only Scheduled here waits for this runtimed: not a holder', [run('a', 'Scheduled', POD)], [], [], [], []],
    ['ended: holds nothing', [run('a', 'Succeeded', POD), run('b', 'Cancelled', POD)], [], [], [], []],
    ['ended with the registration cleanup pending: still holds', [run('a', 'Cancelled', POD, { finalizer: true })], [], ['a'], [], []],
    ['WaitingInput holds nothing', [run('a', 'WaitingInput', undefined)], [], [], [], []],
    ['another Pod', [run('a', 'Running', OTHER_POD), run('b', 'Failed', OTHER_POD, { finalizer: true })], [], [], [], []],
    [
      'a claim in flight the cache still shows Scheduled here holds',
      [run('a', 'Scheduled', POD)],
      [{ uid: 'a', attempt: 1 }],
      [],
      ['a'],
      [],
    ],
    [
      'a claim the cache shows claimed is settled (the cache counts it)',
      [run('a', 'Running', POD)],
      [{ uid: 'a', attempt: 1 }],
      ['a'],
      [],
      ['a'],
    ],
    ['a claim whose Run moved to another Pod is settled', [run('a', 'Scheduled', OTHER_POD)], [{ uid: 'a', attempt: 1 }], [], [], ['a']],
    ['a claim whose Run went back to Pending is settled', [run('a', 'Pending', undefined)], [{ uid: 'a', attempt: 1 }], [], [], ['a']],
    ['a claim of another attempt is settled', [run('a', 'Scheduled', POD, { attempt: 2 })], [{ uid: 'a', attempt: 1 }], [], [], ['a']],
    ['a claim whose Run is gone is settled', [], [{ uid: 'a', attempt: 1 }], [], [], ['a']],
  ];

  it.each(cases)('%s', (_name, runs, inFlight, claimed, pending, settled) => {
    const holders = podHolders(runs, POD, inFlight);
    expect([...holders.claimed.keys()].sort()).toEqual(claimed);
    expect([...holders.inFlight].sort()).toEqual(pending);
    expect(holders.settled.sort()).toEqual(settled);
  });

  it('names the claimed holders (for the live check)', () => {
    expect(podHolders([run('a', 'Running', POD)], POD, []).claimed.get('a')).toBe('run-a');
  });
});

describe('decideClaim', () => {
  const holders = (claimed: string[], inFlight: string[] = []) => ({
    claimed: new Map(claimed.map((uid) => [uid, `run-${uid}`])),
    inFlight: new Set(inFlight),
  });

  // [name, capacity, claimed holders, in-flight holders, claim?]
  const cases: [string, number | undefined, string[], string[], boolean][] = [
    ['an empty Pod', 1, [], [], true],
    ['the last free unit', 2, ['a'], [], true],
    ['full of claimed Runs', 1, ['a'], [], false],
    ['full with a claim in flight', 1, [], ['a'], false],
    ['full with both', 2, ['a'], ['b'], false],
    ['over capacity already', 1, ['a', 'b'], [], false],
    ['a Run counted both claimed and in flight counts once', 2, ['a'], ['a'], true],
    ['this Run itself is not counted (claimed in the cache)', 1, ['self'], [], true],
    ['this Run itself is not counted (its own earlier claim in flight)', 1, [], ['self'], true],
    ['no capacity declared: nothing is checked', undefined, ['a', 'b', 'c'], ['d'], true],
  ];

  it.each(cases)('%s (capacity %s)', (_name, capacity, claimed, inFlight, claim) => {
    const decision = decideClaim({ uid: 'self', podName: 'rt-0', capacity, holders: holders(claimed, inFlight) });
    expect(decision.claim).toBe(claim);
  });

  it('a refusal says why: PodAtCapacity, naming the Pod and the counts', () => {
    const decision = decideClaim({ uid: 'self', podName: 'rt-0', capacity: 2, holders: holders(['a', 'b'], ['c']) });
    expect(decision).toEqual({
      claim: false,
      reason: 'PodAtCapacity',
      held: 3,
      capacity: 2,
      message:
        'Pod rt-0 already holds 3 of its 2 Runs (spec.runs); claiming this one would exceed it, so it was given back to be scheduled again',
    });
  });
});

describe('ClaimSlots', () => {
  it('two Runs bound to the last unit and decided at once: the first claims, the second is refused', () => {
    const slots = new ClaimSlots(POD, 'rt-0', 1);
    const a = run('a', 'Scheduled', POD);
    const b = run('b', 'Scheduled', POD);
    const cache = [a, b];
    expect(slots.decide(a, cache).claim).toBe(true);
    // The claim of a is in flight: the cache still shows it Scheduled.
    expect(slots.decide(b, cache)).toMatchObject({ claim: false, held: 1, capacity: 1 });
    expect(slots.inFlight).toBe(1);
  });

  it('once the cache shows the claim, the cache counts it and the claim in flight is forgotten', () => {
    const slots = new ClaimSlots(POD, 'rt-0', 1);
    expect(slots.decide(run('a', 'Scheduled', POD), [run('a', 'Scheduled', POD)]).claim).toBe(true);
    const decision = slots.decide(run('b', 'Scheduled', POD), [run('a', 'Running', POD), run('b', 'Scheduled', POD)]);
    expect(decision.claim).toBe(false);
    expect([...decision.holders.keys()]).toEqual(['a']);
    expect(slots.inFlight).toBe(0);
  });

  it('a unit frees when its Run ends, and a claim given back frees its unit', () => {
    const slots = new ClaimSlots(POD, 'rt-0', 1);
    expect(slots.decide(run('a', 'Scheduled', POD), [run('a', 'Scheduled', POD)]).claim).toBe(true);
    slots.release('a');
    expect(slots.decide(run('b', 'Scheduled', POD), [run('a', 'Scheduled', POD), run('b', 'Scheduled', POD)]).claim).toBe(true);
    expect(slots.decide(run('c', 'Scheduled', POD), [run('b', 'Succeeded', POD), run('c', 'Scheduled', POD)]).claim).toBe(true);
  });

  it('deciding the same Run again (a retried claim) does not count it against itself', () => {
    const slots = new ClaimSlots(POD, 'rt-0', 1);
    const a = run('a', 'Scheduled', POD);
    expect(slots.decide(a, [a]).claim).toBe(true);
    expect(slots.decide(a, [a]).claim).toBe(true);
    expect(slots.inFlight).toBe(1);
  });

  it('without a declared capacity it claims everything and still tracks nothing wrong', () => {
    const slots = new ClaimSlots(POD, 'rt-0', undefined);
    const runs = [run('a', 'Running', POD), run('b', 'Scheduled', POD)];
    expect(slots.decide(run('b', 'Scheduled', POD), runs).claim).toBe(true);
    expect(slots.capacity).toBeUndefined();
  });
});
