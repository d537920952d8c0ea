import { RUN_REASONS } from '@kruntimes/api';
import { desiredPods, resolveScaling, waitsForSlot } from './scaling.ts';
import type { Demand, ResolvedScaling } from './scaling.ts';

const scaling: ResolvedScaling = { minReplicas: 1, maxReplicas: 8, spareRuns: 0, scaleDownDelaySeconds: 300 };

describe('resolveScaling', () => {
  it('applies the CRD defaults', () => {
    expect(resolveScaling({ maxReplicas: 4 })).toEqual({ minReplicas: 1, maxReplicas: 4, spareRuns: 0, scaleDownDelaySeconds: 300 });
  });

  it('keeps what is set, 0 included', () => {
    expect(resolveScaling({ minReplicas: 0, maxReplicas: 4, spareRuns: 2, scaleDownDelaySeconds: 0 })).toEqual({
      minReplicas: 0,
      maxReplicas: 4,
      spareRuns: 2,
      scaleDownDelaySeconds: 0,
    });
  });
});

describe('desiredPods', () => {
  it.each<[string, Demand, number, Partial<ResolvedScaling>, { needed: number; desired: number }]>([
    ['nothing held or waiting: the minimum', { held: 0, pending: 0 }, 4, {}, { needed: 0, desired: 1 }],
    ['scale to zero', { held: 0, pending: 0 }, 4, { minReplicas: 0 }, { needed: 0, desired: 0 }],
    ['scale from zero: one Pending Run needs a Pod', { held: 0, pending: 1 }, 4, { minReplicas: 0 }, { needed: 1, desired: 1 }],
    ['held and pending round up', { held: 5, pending: 4 }, 4, {}, { needed: 3, desired: 3 }],
    ['exactly full', { held: 8, pending: 0 }, 4, {}, { needed: 2, desired: 2 }],
    ['spare slots count as demand', { held: 4, pending: 0 }, 4, { spareRuns: 1 }, { needed: 2, desired: 2 }],
    ['spare slots alone keep a Pod at min 0', { held: 0, pending: 0 }, 4, { minReplicas: 0, spareRuns: 2 }, { needed: 1, desired: 1 }],
    ['clamped to the maximum', { held: 4, pending: 200 }, 4, {}, { needed: 51, desired: 8 }],
    ['a minimum above demand', { held: 1, pending: 0 }, 4, { minReplicas: 3 }, { needed: 1, desired: 3 }],
    ['one run per Pod', { held: 2, pending: 3 }, 1, {}, { needed: 5, desired: 5 }],
    ['a nonsensical runsPerPod 0 counts as 1', { held: 2, pending: 0 }, 0, {}, { needed: 2, desired: 2 }],
    [
      'a minimum above the maximum (refused by CEL) gives the maximum',
      { held: 0, pending: 0 },
      4,
      { minReplicas: 9 },
      { needed: 0, desired: 8 },
    ],
  ])('%s', (_what, demand, runsPerPod, overrides, expected) => {
    expect(desiredPods(demand, runsPerPod, { ...scaling, ...overrides })).toEqual(expected);
  });
});

describe('waitsForSlot', () => {
  it.each<[string | undefined, boolean]>([
    [undefined, true],
    [RUN_REASONS.awaitingSchedule, true],
    [RUN_REASONS.noCapacity, true],
    [RUN_REASONS.waitingForCapacity, true],
    [RUN_REASONS.retryBackoff, true],
    [RUN_REASONS.drained, true],
    [RUN_REASONS.runtimeSuspended, false],
    [RUN_REASONS.namespaceBlocked, false],
    [RUN_REASONS.forbidden, false],
    [RUN_REASONS.runSlotCapReached, false],
    [RUN_REASONS.sourceNotFound, false],
  ])('%s: %s', (reason, expected) => {
    expect(waitsForSlot(reason)).toBe(expected);
  });
});
