import { choosePod, freeSlots, isBindable, scalingState, waitingMessage } from './pod-choice.ts';
import type { PlacementStrategy, PodInfo, PodSlots } from './pod-choice.ts';

function pod(name: string, extra: Partial<PodInfo> = {}): PodInfo {
  return { name, uid: `uid-${name}`, ready: true, deleting: false, capacity: undefined, scaleDown: false, outdated: false, ...extra };
}

/** `slots('p1', 4, 1)`: Pod p1 with 4 slots, 1 held. */
function slots(name: string, capacity: number, held: number, extra: Partial<PodInfo> = {}): PodSlots {
  return { pod: pod(name, extra), capacity, held };
}

describe('isBindable', () => {
  it.each<[string, Partial<PodInfo>, boolean]>([
    ['ready', {}, true],
    ['not ready', { ready: false }, false],
    ['deleting', { deleting: true }, false],
    ['marked for scale-down', { scaleDown: true }, false],
    ['outdated, but ready (preferred less, not excluded)', { outdated: true }, true],
  ])('%s', (_name, extra, bindable) => {
    expect(isBindable(pod('p', extra))).toBe(bindable);
  });
});

describe('freeSlots', () => {
  it.each([
    [4, 1, 3],
    [4, 4, 0],
    [1, 3, 0],
  ])('capacity %i, held %i: %i free (never negative)', (capacity, held, free) => {
    expect(freeSlots(slots('p', capacity, held))).toBe(free);
  });
});

describe('choosePod', () => {
  it.each<[string, PodSlots[], PlacementStrategy, string | undefined]>([
    ['no Pods', [], 'spread', undefined],
    ['every Pod full', [slots('p1', 2, 2), slots('p2', 1, 3)], 'pack', undefined],
    ['spread: most free wins', [slots('p1', 4, 3), slots('p2', 4, 1), slots('p3', 4, 2)], 'spread', 'p2'],
    ['spread: a bigger Pod with more free wins over a less loaded small one', [slots('p1', 2, 0), slots('p2', 8, 3)], 'spread', 'p2'],
    ['spread: ties by name', [slots('p3', 4, 1), slots('p1', 4, 1), slots('p2', 4, 1)], 'spread', 'p1'],
    ['pack: most held wins', [slots('p1', 4, 1), slots('p2', 4, 3), slots('p3', 4, 0)], 'pack', 'p2'],
    ['pack: a full Pod is skipped, the next fullest wins', [slots('p1', 4, 4), slots('p2', 4, 2), slots('p3', 4, 1)], 'pack', 'p2'],
    ['pack: ties by name', [slots('p2', 4, 2), slots('p1', 4, 2)], 'pack', 'p1'],
    ['pack: all empty, by name', [slots('p2', 4, 0), slots('p1', 4, 0)], 'pack', 'p1'],
    [
      'current template before outdated, even when the outdated one is emptier (spread)',
      [slots('old', 4, 0, { outdated: true }), slots('new', 4, 3)],
      'spread',
      'new',
    ],
    [
      'current template before outdated, even when the outdated one is fuller (pack)',
      [slots('old', 4, 3, { outdated: true }), slots('new', 4, 0)],
      'pack',
      'new',
    ],
    ['an outdated Pod when no current one has room', [slots('old', 4, 1, { outdated: true }), slots('new', 4, 4)], 'spread', 'old'],
  ])('%s', (_name, candidates, strategy, chosen) => {
    expect(choosePod(candidates, strategy)?.pod.name).toBe(chosen);
  });
});

describe('the message of a Run waiting for capacity', () => {
  it.each<[string, { desiredPods: number; maxPods: number }, PodSlots[], string]>([
    [
      'scaling up: fewer Pods asked for than the maximum',
      { desiredPods: 8, maxPods: 10 },
      [slots('p1', 4, 4), slots('p2', 4, 4), slots('p3', 4, 4)],
      'waiting for a slot: Runtime python has 3 of 8 Pods ready, 12 of 12 slots used; scaling up',
    ],
    [
      'at the maximum',
      { desiredPods: 8, maxPods: 8 },
      Array.from({ length: 8 }, (_, i) => slots(`p${i}`, 4, 4)),
      'waiting for a slot: Runtime python has 8 of 8 Pods ready, 32 of 32 slots used; at its maximum of 8 Pods',
    ],
    [
      'scale from zero: no Pod yet',
      { desiredPods: 0, maxPods: 3 },
      [],
      'waiting for a slot: Runtime python has 0 of 0 Pods ready, 0 of 0 slots used; scaling up',
    ],
    [
      'an over-committed Pod counts its slots, not more',
      { desiredPods: 1, maxPods: 1 },
      [slots('p1', 2, 3)],
      'waiting for a slot: Runtime python has 1 of 1 Pod ready, 2 of 2 slots used; at its maximum of 1 Pod',
    ],
  ])('%s', (_name, pool, bindable, message) => {
    const scaling = { runtime: 'python', ...pool };
    expect(waitingMessage(scaling, bindable)).toBe(message);
    expect(message.endsWith(scalingState(scaling))).toBe(true);
  });
});
