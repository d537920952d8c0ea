import { RUN_REASONS } from '@kruntimes/api';
import type { RunPhase } from '@kruntimes/api';
import { holdsCapacity } from '@kruntimes/run-state';
import { SETTLED_SILENT, WAIT_WRITES_PER_PASS, oldestFirst, planPlacement, roomFor } from './placement.ts';
import type { Decision, PlacementInput, PodInfo, RunInfo } from './placement.ts';

const NOW = Date.parse('2026-12-02T12:00:00Z');

function pod(name: string, extra: Partial<PodInfo> = {}): PodInfo {
  return { name, uid: `uid-${name}`, ready: true, deleting: false, capacity: undefined, scaleDown: false, outdated: false, ...extra };
}

/** `run('a', 'Scheduled', 'p1')`: a Run created at second `order` (default: its position). */
function run(name: string, phase: RunPhase = 'Pending', pod?: string, extra: Partial<RunInfo> = {}): RunInfo {
  const cleanup = extra.holdsCapacity;
  return {
    uid: `uid-${name}`,
    name,
    creationTimestamp: '2026-12-02T11:00:00Z',
    phase,
    reason: undefined,
    message: undefined,
    assignedPodUID: pod === undefined ? undefined : `uid-${pod}`,
    holdsCapacity: cleanup ?? holdsCapacity(phase),
    cancelRequested: false,
    executedElsewhere: false,
    deleting: false,
    notBefore: undefined,
    hasSnapshot: true,
    ...extra,
  };
}

function input(overrides: Partial<PlacementInput>): PlacementInput {
  return { runtimeExists: true, runsPerPod: 2, pods: [], runs: [], assumed: new Map(), nowMs: NOW, ...overrides };
}

/** Decisions as short strings: `bind a->p1`, `cancel a`, `NoCapacity a`. */
function summary(decisions: Decision[]): string[] {
  return decisions.map((d) => {
    switch (d.action) {
      case 'bind':
        return `bind ${d.run.name}->${d.pod.name}`;
      case 'cancel':
        return `cancel ${d.run.name}`;
      case 'unschedulable':
        return `${d.reason} ${d.run.name}`;
    }
  });
}

describe('planPlacement', () => {
  it.each<[string, Partial<PlacementInput>, string[], number]>([
    ['no Runs: nothing to do', { pods: [pod('p1')] }, [], 0],
    [
      '3 Pods x 2 = 6 binds, the 7th waits with NoCapacity; spread by most free, ties by name',
      { pods: [pod('p1'), pod('p2'), pod('p3')], runs: ['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7'].map((n) => run(n)) },
      ['bind r1->p1', 'bind r2->p2', 'bind r3->p3', 'bind r4->p1', 'bind r5->p2', 'bind r6->p3', 'NoCapacity r7'],
      1,
    ],
    [
      'oldest first by creationTimestamp, then name',
      {
        runsPerPod: 1,
        pods: [pod('p1')],
        runs: [
          run('b', 'Pending', undefined, { creationTimestamp: '2026-12-02T11:00:05Z' }),
          run('c'),
          run('a', 'Pending', undefined, { creationTimestamp: '2026-12-02T11:00:05Z' }),
        ],
      },
      ['bind c->p1', 'NoCapacity a', 'NoCapacity b'],
      2,
    ],
    [
      'Runs that hold capacity are counted; Runs that do not are not',
      {
        pods: [pod('p1'), pod('p2')],
        runs: [
          run('s', 'Scheduled', 'p1'),
          run('r', 'Running', 'p1'),
          run('f', 'Ready', 'p2'),
          run('done', 'Succeeded', 'p2'),
          run('w', 'WaitingInput'),
          run('new'),
        ],
      },
      ['bind new->p2'],
      0,
    ],
    [
      'a finished Run still carrying the registration-cleanup finalizer keeps its unit',
      {
        runsPerPod: 1,
        pods: [pod('p1')],
        runs: [run('old', 'Cancelled', 'p1', { holdsCapacity: holdsCapacity('Cancelled', true) }), run('new')],
      },
      ['NoCapacity new'],
      1,
    ],
    [
      'assumed binds count although the cache still shows them Pending, and are not planned again',
      { runsPerPod: 1, pods: [pod('p1'), pod('p2')], runs: [run('a'), run('b'), run('c')], assumed: new Map([['uid-a', 'uid-p1']]) },
      ['bind b->p2', 'NoCapacity c'],
      1,
    ],
    [
      'never binds to a not-ready or deleting Pod',
      { pods: [pod('p1', { ready: false }), pod('p2', { deleting: true })], runs: [run('a')] },
      ['NoReadyPods a'],
      1,
    ],
    ['no Pods at all', { runs: [run('a')] }, ['NoReadyPods a'], 1],
    ['the Runtime does not exist', { runtimeExists: false, pods: [pod('p1')], runs: [run('a')] }, ['RuntimeNotFound a'], 1],
    [
      'the same reason is not written twice',
      {
        runtimeExists: false,
        runs: [run('a', 'Pending', undefined, { reason: 'RuntimeNotFound' }), run('b', 'Pending', undefined, { reason: 'NoCapacity' })],
      },
      ['RuntimeNotFound b'],
      2,
    ],
    [
      'cancel before assignment, even without a Runtime, and without using capacity',
      { runsPerPod: 1, pods: [pod('p1')], runs: [run('a', 'Pending', undefined, { cancelRequested: true }), run('b')] },
      ['cancel a', 'bind b->p1'],
      0,
    ],
    [
      'a Run executed elsewhere (spec.origin) is never bound, cancelled or unschedulable, and uses no capacity',
      {
        runsPerPod: 1,
        pods: [pod('p1')],
        runs: [
          run('synced', 'Pending', undefined, { executedElsewhere: true, creationTimestamp: '2026-12-02T10:00:00Z' }),
          run('synced-cancelled', 'Pending', undefined, { executedElsewhere: true, cancelRequested: true }),
          run('b'),
        ],
      },
      ['bind b->p1'],
      0,
    ],
    [
      'a Run executed elsewhere is left alone even without a Runtime',
      { runtimeExists: false, runs: [run('synced', 'Pending', undefined, { executedElsewhere: true })] },
      [],
      0,
    ],
    [
      'a Run in retry backoff waits without blocking younger Runs',
      {
        runsPerPod: 1,
        pods: [pod('p1')],
        runs: [
          run('backoff', 'Pending', undefined, { creationTimestamp: '2026-12-02T10:00:00Z', notBefore: '2026-12-02T12:00:30Z' }),
          run('young'),
        ],
      },
      ['bind young->p1'],
      1,
    ],
    [
      'a Run whose notBefore has passed is bound',
      { pods: [pod('p1')], runs: [run('a', 'Pending', undefined, { notBefore: '2026-12-02T12:00:00Z' })] },
      ['bind a->p1'],
      0,
    ],
    [
      "each Pod's own capacity wins over the Runtime's (a roll of spec.runs in progress)",
      {
        runsPerPod: 3,
        pods: [pod('old', { capacity: 1 }), pod('new', { capacity: 3 })],
        runs: [run('x', 'Running', 'old'), run('a'), run('b'), run('c'), run('d')],
      },
      ['bind a->new', 'bind b->new', 'bind c->new', 'NoCapacity d'],
      1,
    ],
    [
      'the snapshot gate: a Run without its source snapshot is not bound (nor reported), a younger one with it is; a cancel still ends it',
      {
        pods: [pod('p1')],
        runs: [
          run('unresolved', 'Pending', undefined, {
            creationTimestamp: '2026-12-02T10:00:00Z',
            hasSnapshot: false,
            reason: 'SourceNotFound',
          }),
          run('cancelled', 'Pending', undefined, { creationTimestamp: '2026-12-02T10:00:01Z', hasSnapshot: false, cancelRequested: true }),
          run('resolved'),
        ],
      },
      ['cancel cancelled', 'bind resolved->p1'],
      1,
    ],
    [
      "the snapshot gate comes before the Runtime checks: no Unschedulable reason overwrites the snapshot controller's",
      { runtimeExists: false, runs: [run('unresolved', 'Pending', undefined, { hasSnapshot: false })] },
      [],
      1,
    ],
    ['a deleting Pending Run is left alone', { pods: [pod('p1')], runs: [run('a', 'Pending', undefined, { deleting: true })] }, [], 0],
    [
      'a Run the admission gate refuses waits with its reason, uses no capacity, and younger Runs still bind',
      {
        runsPerPod: 1,
        pods: [pod('p1')],
        runs: [run('blocked', 'Pending', undefined, { creationTimestamp: '2026-12-02T10:00:00Z' }), run('young')],
        admission: new Map([['uid-blocked', { action: 'refuse', reason: 'RuntimeSuspended', message: 'suspended' }]]),
      },
      ['RuntimeSuspended blocked', 'bind young->p1'],
      1,
    ],
    [
      'a refusal already recorded is not written again',
      {
        pods: [pod('p1')],
        runs: [run('a', 'Pending', undefined, { reason: 'Forbidden' })],
        admission: new Map([['uid-a', { action: 'refuse', reason: 'Forbidden', message: 'no use' }]]),
      },
      [],
      1,
    ],
    [
      'a deferred Run waits as it is: nothing written',
      {
        pods: [pod('p1')],
        runs: [run('a', 'Pending', undefined, { reason: 'NoCapacity' })],
        admission: new Map([['uid-a', { action: 'defer', message: 'the review failed' }]]),
      },
      [],
      1,
    ],
    [
      'an admitted Run binds; cancel and RuntimeNotFound come before the gate',
      {
        runtimeExists: false,
        runs: [run('a', 'Pending', undefined, { cancelRequested: true }), run('b')],
        admission: new Map([
          ['uid-a', { action: 'refuse', reason: 'NamespaceBlocked', message: 'blocked' }],
          ['uid-b', { action: 'refuse', reason: 'NamespaceBlocked', message: 'blocked' }],
        ]),
      },
      ['cancel a', 'RuntimeNotFound b'],
      1,
    ],
    [
      'admitted explicitly',
      { pods: [pod('p1')], runs: [run('a')], admission: new Map([['uid-a', { action: 'admit' }]]) },
      ['bind a->p1'],
      0,
    ],
    [
      'an over-committed Pod (e.g. after a shrink of spec.runs) has no room, never negative room',
      { runsPerPod: 1, pods: [pod('p1'), pod('p2')], runs: [run('x', 'Running', 'p1'), run('y', 'Running', 'p1'), run('a'), run('b')] },
      ['bind a->p2', 'NoCapacity b'],
      1,
    ],
  ])('%s', (_name, overrides, expected, unbound) => {
    const plan = planPlacement(input(overrides));
    expect(summary(plan.decisions)).toEqual(expected);
    expect(plan.unbound).toBe(unbound);
  });

  const scaling = { runtime: 'py', desiredPods: 2, maxPods: 4 };
  const atMaximum = { runtime: 'py', desiredPods: 2, maxPods: 2 };
  it.each<[string, Partial<PlacementInput>, string[], number]>([
    [
      'with spec.scaling Runs pack onto the fullest Pod with room, so other Pods empty out',
      {
        runsPerPod: 3,
        scaling,
        pods: [pod('p1'), pod('p2'), pod('p3')],
        runs: [run('x', 'Running', 'p2'), run('a'), run('b'), run('c'), run('d')],
      },
      ['bind a->p2', 'bind b->p2', 'bind c->p1', 'bind d->p1'],
      0,
    ],
    [
      'packing counts assumed binds as held',
      { runsPerPod: 3, scaling, pods: [pod('p1'), pod('p2')], runs: [run('x'), run('a')], assumed: new Map([['uid-x', 'uid-p2']]) },
      ['bind a->p2'],
      0,
    ],
    [
      'a Pod marked for scale-down receives nothing, however empty (spread)',
      { runsPerPod: 2, pods: [pod('going', { scaleDown: true }), pod('p2')], runs: [run('x', 'Running', 'p2'), run('a'), run('b')] },
      ['bind a->p2', 'NoCapacity b'],
      1,
    ],
    [
      'a Pod marked for scale-down receives nothing, however full (pack)',
      {
        runsPerPod: 3,
        scaling,
        pods: [pod('going', { scaleDown: true }), pod('p2')],
        runs: [run('x', 'Running', 'going'), run('a')],
      },
      ['bind a->p2'],
      0,
    ],
    [
      'Pods of the newest template first; an outdated one only when they are full',
      {
        runsPerPod: 1,
        pods: [pod('a-old', { outdated: true }), pod('b-new'), pod('c-new')],
        runs: [run('r1'), run('r2'), run('r3'), run('r4')],
      },
      ['bind r1->b-new', 'bind r2->c-new', 'bind r3->a-old', 'NoCapacity r4'],
      1,
    ],
    [
      'with spec.scaling and every slot taken: WaitingForCapacity, scaling up',
      { runsPerPod: 1, scaling, pods: [pod('p1'), pod('p2')], runs: [run('x', 'Running', 'p1'), run('y', 'Running', 'p2'), run('a')] },
      ['WaitingForCapacity a'],
      1,
    ],
    [
      'with spec.scaling and no ready Pod (scale from zero): WaitingForCapacity, not NoReadyPods',
      { scaling, pods: [pod('starting', { ready: false })], runs: [run('a')] },
      ['WaitingForCapacity a'],
      1,
    ],
    [
      'with spec.scaling, only Pods marked for scale-down: WaitingForCapacity',
      { scaling, pods: [pod('going', { scaleDown: true })], runs: [run('a')] },
      ['WaitingForCapacity a'],
      1,
    ],
    [
      'a Run already waiting in the same scaling state is not written again',
      {
        scaling,
        runs: [
          run('a', 'Pending', undefined, {
            reason: 'WaitingForCapacity',
            message: 'waiting for a slot: Runtime py has 0 of 2 Pods ready, 0 of 0 slots used; scaling up',
          }),
        ],
      },
      [],
      1,
    ],
    [
      'a Run waiting while scaling up is written again once the Runtime is at its maximum',
      {
        scaling: atMaximum,
        runs: [
          run('a', 'Pending', undefined, {
            reason: 'WaitingForCapacity',
            message: 'waiting for a slot: Runtime py has 0 of 2 Pods ready, 0 of 0 slots used; scaling up',
          }),
        ],
      },
      ['WaitingForCapacity a'],
      1,
    ],
    [
      'a Run that waited NoCapacity before spec.scaling was set is written WaitingForCapacity',
      { scaling, runs: [run('a', 'Pending', undefined, { reason: 'NoCapacity', message: 'all 2 ready Pods are full' })] },
      ['WaitingForCapacity a'],
      1,
    ],
    [
      'a Run that waited WaitingForCapacity before spec.scaling was removed is written NoCapacity',
      {
        runsPerPod: 1,
        pods: [pod('p1')],
        runs: [run('x', 'Running', 'p1'), run('a', 'Pending', undefined, { reason: 'WaitingForCapacity', message: 'waiting for a slot' })],
      },
      ['NoCapacity a'],
      1,
    ],
    [
      'the reasons that come before placement stay as they are with spec.scaling',
      { scaling, runtimeExists: false, pods: [pod('p1')], runs: [run('a')] },
      ['RuntimeNotFound a'],
      1,
    ],
  ])('%s', (_name, overrides, expected, unbound) => {
    const plan = planPlacement(input(overrides));
    expect(summary(plan.decisions)).toEqual(expected);
    expect(plan.unbound).toBe(unbound);
  });

  it.each<[string, Partial<PlacementInput>, string, number]>([
    [
      'scaling up',
      {
        runsPerPod: 2,
        scaling,
        pods: [pod('p1'), pod('p2', { ready: false })],
        runs: [run('x', 'Running', 'p1'), run('y', 'Running', 'p1'), run('a'), run('b')],
      },
      'waiting for a slot: Runtime py has 1 of 2 Pods ready, 2 of 2 slots used; scaling up',
      2,
    ],
    [
      'at its maximum',
      { runsPerPod: 1, scaling: atMaximum, pods: [pod('p1'), pod('p2')], runs: [run('x', 'Running', 'p1'), run('a'), run('b')] },
      'waiting for a slot: Runtime py has 2 of 2 Pods ready, 2 of 2 slots used; at its maximum of 2 Pods',
      1,
    ],
  ])('the WaitingForCapacity message names the Runtime, its Pods and slots: %s', (_name, overrides, message, waiting) => {
    const plan = planPlacement(input(overrides));
    const written = plan.decisions.filter((d) => d.action === 'unschedulable');
    expect(written.map((d) => d.message)).toEqual(Array.from({ length: waiting }, () => message));
    expect(plan.waitingForCapacity).toBe(waiting);
  });

  const capOf2 = (held: number): PlacementInput['namespaceSlots'] => ({ namespace: 'team-a', cap: { kind: 'cap', slots: 2 }, held });
  const CAP_MESSAGE =
    'namespace team-a holds all 2 run slots its cap allows (namespace annotation kruntimes.io/run-slots: "2"): the Run binds when one of them frees';

  it.each<[string, Partial<PlacementInput>, string[], number]>([
    [
      'no cap: every Run a Pod has room for binds',
      { pods: [pod('p1'), pod('p2')], runs: [run('a'), run('b'), run('c')] },
      ['bind a->p1', 'bind b->p2', 'bind c->p1'],
      0,
    ],
    [
      'cap 2, nothing held: the two oldest bind, the third waits RunSlotCapReached though a Pod has room',
      { pods: [pod('p1'), pod('p2')], runs: [run('a'), run('b'), run('c')], namespaceSlots: capOf2(0) },
      ['bind a->p1', 'bind b->p2', 'RunSlotCapReached c'],
      1,
    ],
    [
      'cap 2, one held by another Runtime of the namespace: one binds',
      { pods: [pod('p1')], runs: [run('a'), run('b')], namespaceSlots: capOf2(1) },
      ['bind a->p1', 'RunSlotCapReached b'],
      1,
    ],
    ['cap reached: nothing binds', { pods: [pod('p1')], runs: [run('a')], namespaceSlots: capOf2(2) }, ['RunSlotCapReached a'], 1],
    [
      'a Run the cap lets through but no Pod has room for waits NoCapacity and takes no slot',
      { runsPerPod: 1, pods: [pod('p1')], runs: [run('a'), run('b')], namespaceSlots: capOf2(0) },
      ['bind a->p1', 'NoCapacity b'],
      0,
    ],
    [
      'the gate first: a Run refused by it is not written RunSlotCapReached, and takes no slot',
      {
        pods: [pod('p1')],
        runs: [run('a'), run('b'), run('c')],
        admission: new Map([['uid-a', { action: 'refuse', reason: 'Forbidden', message: 'no' }]]),
        namespaceSlots: capOf2(0),
      },
      ['Forbidden a', 'bind b->p1', 'bind c->p1'],
      0,
    ],
    [
      'a Run in backoff takes no slot and is not written',
      {
        pods: [pod('p1')],
        runs: [run('a', 'Pending', undefined, { notBefore: '2026-12-02T12:00:30Z' }), run('b'), run('c'), run('d')],
        namespaceSlots: capOf2(0),
      },
      ['bind b->p1', 'bind c->p1', 'RunSlotCapReached d'],
      1,
    ],
    [
      'a cancel is written whatever the cap',
      { pods: [pod('p1')], runs: [run('a', 'Pending', undefined, { cancelRequested: true })], namespaceSlots: capOf2(2) },
      ['cancel a'],
      0,
    ],
    [
      'a Run already waiting RunSlotCapReached with the same message is not written again',
      {
        pods: [pod('p1')],
        runs: [run('a', 'Pending', undefined, { reason: 'RunSlotCapReached', message: CAP_MESSAGE })],
        namespaceSlots: capOf2(2),
      },
      [],
      1,
    ],
    [
      'a Run waiting RunSlotCapReached under another cap is written again (the cap changed)',
      {
        pods: [pod('p1')],
        runs: [run('a', 'Pending', undefined, { reason: 'RunSlotCapReached', message: CAP_MESSAGE.replaceAll('2', '3') })],
        namespaceSlots: capOf2(2),
      },
      ['RunSlotCapReached a'],
      1,
    ],
    [
      'an invalid cap binds nothing',
      { pods: [pod('p1')], runs: [run('a')], namespaceSlots: { namespace: 'team-a', cap: { kind: 'invalid', value: 'x' }, held: 0 } },
      ['RunSlotCapReached a'],
      1,
    ],
  ])('the namespace run-slot cap: %s', (_name, overrides, expected, waitingForSlotCap) => {
    const plan = planPlacement(input(overrides));
    expect(summary(plan.decisions)).toEqual(expected);
    expect(plan.waitingForSlotCap).toBe(waitingForSlotCap);
  });

  it('a Run over the namespace cap with spec.scaling waits RunSlotCapReached, not WaitingForCapacity: Pods added could not take it', () => {
    const plan = planPlacement(input({ runsPerPod: 1, scaling, pods: [], runs: [run('a')], namespaceSlots: capOf2(2) }));
    expect(summary(plan.decisions)).toEqual(['RunSlotCapReached a']);
    expect(plan.waitingForCapacity).toBe(0);
    expect(plan.waitingForSlotCap).toBe(1);
  });

  it('counts no Run as waiting for capacity without spec.scaling', () => {
    const plan = planPlacement(input({ runsPerPod: 1, pods: [pod('p1')], runs: [run('x', 'Running', 'p1'), run('a')] }));
    expect(summary(plan.decisions)).toEqual(['NoCapacity a']);
    expect(plan.waitingForCapacity).toBe(0);
  });

  it('spreads a burst exactly: 8 Runs on 8 Pods of 4 slots, one each, in one pass or one Run per pass', () => {
    const pods = Array.from({ length: 8 }, (_, i) => pod(`p${i}`));
    const burst = Array.from({ length: 8 }, (_, i) => run(`r${i}`));
    const perPod = (binds: Map<string, string>): number[] => pods.map((p) => [...binds.values()].filter((uid) => uid === p.uid).length);
    const once = planPlacement(input({ runsPerPod: 4, pods, runs: burst }));
    expect(perPod(new Map(once.decisions.flatMap((d) => (d.action === 'bind' ? [[d.run.uid, d.pod.uid]] : []))))).toEqual(Array(8).fill(1));
    // Pass after pass, each seeing the earlier binds only as assumed (the watch not caught up).
    const assumed = new Map<string, string>();
    for (let i = 0; i < burst.length; i += 1) {
      const plan = planPlacement(input({ runsPerPod: 4, pods, runs: burst.slice(0, i + 1), assumed: new Map(assumed) }));
      for (const d of plan.decisions) if (d.action === 'bind') assumed.set(d.run.uid, d.pod.uid);
    }
    expect(perPod(assumed)).toEqual(Array(8).fill(1));
  });

  it('writes at most WAIT_WRITES_PER_PASS waiting reasons per pass, never fewer binds, and leaves the rest to the next passes', () => {
    const count = WAIT_WRITES_PER_PASS * 2 + 4;
    // 4 free slots; 10 old Runs refused by the admission gate, then the burst.
    const refused = Array.from({ length: 10 }, (_, i) =>
      run(`x${String(i).padStart(2, '0')}`, 'Pending', undefined, { creationTimestamp: '2026-12-02T10:00:00Z' }),
    );
    const burst = Array.from({ length: count }, (_, i) => run(`r${String(i).padStart(2, '0')}`));
    const admission = new Map(refused.map((r) => [r.uid, { action: 'refuse' as const, reason: 'Forbidden' as const, message: 'no use' }]));
    const kinds = (plan: ReturnType<typeof planPlacement>): Record<string, number> =>
      plan.decisions.reduce<Record<string, number>>((acc, d) => ({ ...acc, [d.action]: (acc[d.action] ?? 0) + 1 }), {});
    let runs = [...refused, ...burst];
    const first = planPlacement(input({ runsPerPod: 2, pods: [pod('p1'), pod('p2')], runs, admission, scaling }));
    expect(kinds(first)).toEqual({ bind: 4, unschedulable: WAIT_WRITES_PER_PASS });
    expect(first.waitWritesLeft).toBe(10 + count - 4 - WAIT_WRITES_PER_PASS);
    // The counts are of every waiting Run, written or not.
    expect(first.waitingForCapacity).toBe(count - 4);
    expect(first.unbound).toBe(10 + count - 4);
    // Pass after pass (the written reasons and the binds now in the cache), until nothing is left to write.
    let plan = first;
    for (let pass = 0; pass < 10 && plan.waitWritesLeft + plan.decisions.length > 0; pass += 1) {
      const written = new Map(plan.decisions.map((d) => [d.run.uid, d]));
      runs = runs.map((r) => {
        const d = written.get(r.uid);
        if (d?.action === 'bind') return { ...r, phase: 'Scheduled' as const, assignedPodUID: d.pod.uid, holdsCapacity: true };
        if (d?.action === 'unschedulable') return { ...r, reason: d.reason, message: d.message };
        return r;
      });
      plan = planPlacement(input({ runsPerPod: 2, pods: [pod('p1'), pod('p2')], runs, admission, scaling }));
      expect(plan.decisions.filter((d) => d.action === 'unschedulable').length).toBeLessThanOrEqual(WAIT_WRITES_PER_PASS);
    }
    expect(plan.decisions).toEqual([]);
    expect(plan.waitWritesLeft).toBe(0);
    expect(runs.filter((r) => r.phase === 'Pending' && r.reason === undefined)).toEqual([]);
  });

  it('plans no waiting reason for a Run whose reason is being written, and counts those writes in the share', () => {
    const runs = Array.from({ length: WAIT_WRITES_PER_PASS + 4 }, (_, i) => run(`r${String(i).padStart(2, '0')}`));
    const inFlight = new Set(runs.slice(0, 10).map((r) => r.uid));
    const plan = planPlacement(input({ runsPerPod: 1, pods: [], runs, scaling, waitWritesInFlight: inFlight }));
    const planned = plan.decisions.map((d) => d.run.uid);
    expect(planned.filter((uid) => inFlight.has(uid))).toEqual([]);
    expect(planned).toHaveLength(WAIT_WRITES_PER_PASS - 10);
    expect(plan.waitWritesLeft).toBe(runs.length - 10 - (WAIT_WRITES_PER_PASS - 10));
    // Every one still counts as waiting.
    expect(plan.waitingForCapacity).toBe(runs.length);
    const full = planPlacement(
      input({ runsPerPod: 1, pods: [], runs, scaling, waitWritesInFlight: new Set(runs.slice(0, WAIT_WRITES_PER_PASS).map((r) => r.uid)) }),
    );
    expect(full.decisions).toEqual([]);
  });

  it('reports when to look again at the earliest backoff', () => {
    const plan = planPlacement(
      input({
        pods: [pod('p1')],
        runs: [
          run('a', 'Pending', undefined, { notBefore: '2026-12-02T12:00:30Z' }),
          run('b', 'Pending', undefined, { notBefore: '2026-12-02T12:00:10Z' }),
        ],
      }),
    );
    expect(plan.decisions).toEqual([]);
    expect(plan.retryAtMs).toBe(Date.parse('2026-12-02T12:00:10Z'));
  });

  it('counts the Runs the admission gate deferred', () => {
    const plan = planPlacement(
      input({
        pods: [pod('p1')],
        runs: [run('a'), run('b')],
        admission: new Map([['uid-a', { action: 'defer', message: 'the review failed' }]]),
      }),
    );
    expect(summary(plan.decisions)).toEqual(['bind b->p1']);
    expect(plan.deferred).toBe(1);
  });

  it('never plans more binds onto a Pod than its free capacity, for any mix', () => {
    // A small exhaustive-ish sweep: every combination of existing load and Pending Runs.
    for (let runsPerPod = 1; runsPerPod <= 3; runsPerPod += 1) {
      for (let existing = 0; existing <= 4; existing += 1) {
        for (let pending = 0; pending <= 8; pending += 1) {
          const runs = [
            ...Array.from({ length: existing }, (_, i) => run(`e${i}`, 'Running', i % 2 === 0 ? 'p1' : 'p2')),
            ...Array.from({ length: pending }, (_, i) => run(`n${i}`)),
          ];
          const plan = planPlacement(input({ runsPerPod, pods: [pod('p1'), pod('p2')], runs }));
          const load = new Map<string, number>();
          for (const r of runs) if (r.assignedPodUID !== undefined) load.set(r.assignedPodUID, (load.get(r.assignedPodUID) ?? 0) + 1);
          for (const d of plan.decisions) if (d.action === 'bind') load.set(d.pod.uid, (load.get(d.pod.uid) ?? 0) + 1);
          const binds = plan.decisions.filter((d) => d.action === 'bind').length;
          const room = ['uid-p1', 'uid-p2'].reduce(
            (sum, uid) => sum + Math.max(0, runsPerPod - runs.filter((r) => r.assignedPodUID === uid).length),
            0,
          );
          expect(binds).toBe(Math.min(pending, room));
          for (const [uid, count] of load) {
            const before = runs.filter((r) => r.assignedPodUID === uid).length;
            expect(count).toBeLessThanOrEqual(Math.max(before, runsPerPod));
          }
        }
      }
    }
  });
});

describe('settled Runs and the tail of a plan', () => {
  const scaling = { runtime: 'py', desiredPods: 1, maxPods: 3 };
  it.each<[string, Partial<PlacementInput>, [string, string][], string]>([
    ['no Runs, a free slot: room', { pods: [pod('p1')] }, [], 'room'],
    ['no Pod: NoReadyPods', {}, [], RUN_REASONS.noReadyPods],
    [
      'a Run waiting NoCapacity with it stored is settled; one whose reason is written is not',
      {
        runsPerPod: 1,
        pods: [pod('p1')],
        runs: [run('s', 'Scheduled', 'p1'), run('a', 'Pending', undefined, { reason: RUN_REASONS.noCapacity }), run('b')],
      },
      [['uid-a', RUN_REASONS.noCapacity]],
      RUN_REASONS.noCapacity,
    ],
    [
      'a Run without a snapshot is settled silent',
      { pods: [pod('p1')], runs: [run('a', 'Pending', undefined, { hasSnapshot: false })] },
      [['uid-a', SETTLED_SILENT]],
      'room',
    ],
    [
      'a Run in backoff is not settled: its plan has a time to look again',
      { pods: [pod('p1')], runs: [run('a', 'Pending', undefined, { notBefore: '2026-12-02T12:05:00Z' })] },
      [],
      'room',
    ],
    [
      'a deferred Run is not settled',
      { pods: [pod('p1')], runs: [run('a')], admission: new Map([['uid-a', { action: 'defer', message: 'no answer' }]]) },
      [],
      'room',
    ],
    [
      'a cancelled Run is not settled',
      { pods: [pod('p1')], runs: [run('a', 'Pending', undefined, { cancelRequested: true })] },
      [],
      'room',
    ],
    [
      'a refused Run with its reason stored is settled',
      {
        runs: [run('a', 'Pending', undefined, { reason: RUN_REASONS.runtimeSuspended })],
        admission: new Map([['uid-a', { action: 'refuse', reason: RUN_REASONS.runtimeSuspended, message: 'suspended' }]]),
      },
      [['uid-a', RUN_REASONS.runtimeSuspended]],
      RUN_REASONS.noReadyPods,
    ],
    [
      'a Run whose reason is being written is not settled',
      { runs: [run('a')], waitWritesInFlight: new Set(['uid-a']) },
      [],
      RUN_REASONS.noReadyPods,
    ],
    [
      'with spec.scaling: WaitingForCapacity with the scaling state, settled when the stored message ends with it',
      {
        scaling,
        runs: [run('a', 'Pending', undefined, { reason: RUN_REASONS.waitingForCapacity, message: 'waiting for a slot: ...; scaling up' })],
      },
      [['uid-a', RUN_REASONS.waitingForCapacity]],
      `${RUN_REASONS.waitingForCapacity}: scaling up`,
    ],
    [
      'the namespace cap reached: its reason and message',
      { pods: [pod('p1')], namespaceSlots: { namespace: 'ns', cap: { kind: 'cap', slots: 1 }, held: 1 } },
      [],
      `${RUN_REASONS.runSlotCapReached}: namespace ns holds all 1 run slots its cap allows (namespace annotation kruntimes.io/run-slots: "1"): the Run binds when one of them frees`,
    ],
    [
      "the cap reached by this plan's bind",
      { pods: [pod('p1')], runs: [run('a')], namespaceSlots: { namespace: 'ns', cap: { kind: 'cap', slots: 1 }, held: 0 } },
      [],
      `${RUN_REASONS.runSlotCapReached}: namespace ns holds all 1 run slots its cap allows (namespace annotation kruntimes.io/run-slots: "1"): the Run binds when one of them frees`,
    ],
  ])('%s', (_name, overrides, settled, tail) => {
    const plan = planPlacement(input(overrides));
    expect([...plan.settled]).toEqual(settled);
    expect(plan.tail).toBe(tail);
  });
});

describe('roomFor', () => {
  it.each<[string, Partial<PlacementInput>, number]>([
    ['no Pod', {}, 0],
    [
      'free slots of bindable Pods, held and assumed ones taken',
      {
        pods: [pod('p1'), pod('p2'), pod('p3', { ready: false })],
        runs: [run('s', 'Scheduled', 'p1'), run('a')],
        assumed: new Map([['uid-a', 'uid-p2']]),
      },
      2,
    ],
    [
      'within the namespace cap',
      { pods: [pod('p1'), pod('p2')], namespaceSlots: { namespace: 'ns', cap: { kind: 'cap', slots: 5 }, held: 4 } },
      1,
    ],
    ['a cap held beyond: none', { pods: [pod('p1')], namespaceSlots: { namespace: 'ns', cap: { kind: 'cap', slots: 1 }, held: 3 } }, 0],
    ['an invalid cap: none', { pods: [pod('p1')], namespaceSlots: { namespace: 'ns', cap: { kind: 'invalid', value: 'x' }, held: 0 } }, 0],
    ['no cap: the slots', { pods: [pod('p1')], namespaceSlots: { namespace: 'ns', cap: { kind: 'none' }, held: 9 } }, 2],
  ])('%s', (_name, overrides, room) => {
    expect(roomFor(input(overrides))).toBe(room);
  });
});

describe('oldestFirst', () => {
  it.each<[string, [number, string], [number, string], number]>([
    ['older first', [1, 'b'], [2, 'a'], -1],
    ['same time: by name', [1, 'b'], [1, 'a'], 1],
    ['unknown time: by name', [Number.NaN, 'a'], [1, 'b'], -1],
    ['the same', [1, 'a'], [1, 'a'], 0],
  ])('%s', (_name, [aMs, aName], [bMs, bName], sign) => {
    expect(Math.sign(oldestFirst({ createdMs: aMs, name: aName }, { createdMs: bMs, name: bName }))).toBe(sign);
  });
});
