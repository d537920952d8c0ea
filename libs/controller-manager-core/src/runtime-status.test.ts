import type { Condition, RuntimeStatus } from '@kruntimes/api';
import { USAGE_WRITE_INTERVAL_MS, decideStatusWrite, runtimeStatus, sameStatus } from './runtime-status.ts';
import type { RolloutView, RuntimeStatusInput } from './runtime-status.ts';

const NOW = '2026-12-02T12:00:00Z';
const rolledOut: RolloutView = {
  generation: 2,
  observedGeneration: 2,
  replicas: 3,
  updatedReplicas: 3,
  availableReplicas: 3,
  desiredReplicas: 3,
  current: true,
};

function input(overrides: Partial<RuntimeStatusInput>): RuntimeStatusInput {
  return {
    generation: 1,
    runsPerPod: 2,
    previous: undefined,
    pods: [],
    runsHoldingCapacity: 0,
    pendingRuns: 0,
    selector: 'kruntimes.io/runtime=python,app.kubernetes.io/component=runtime',
    pool: undefined,
    rollout: undefined,
    problems: [],
    isolation: 'perRunUser',
    now: NOW,
    ...overrides,
  };
}

const ready = { ready: true, deleting: false, capacity: undefined };
const notReady = { ready: false, deleting: false, capacity: undefined };
const deleting = { ready: true, deleting: true, capacity: undefined };

describe('runtimeStatus', () => {
  it.each<[string, Partial<RuntimeStatusInput>, Partial<RuntimeStatus>, [string, string][]]>([
    [
      '3 ready Pods x 2 Runs = capacity 6',
      { pods: [ready, ready, ready], runsHoldingCapacity: 4, rollout: rolledOut },
      { replicas: 3, readyPods: 3, totalCapacity: 6, usedCapacity: 4 },
      [
        ['Available', 'PodsReady'],
        ['Progressing', 'RolledOut'],
      ],
    ],
    [
      'not ready and deleting Pods add no capacity',
      { pods: [ready, notReady, deleting] },
      { replicas: 2, readyPods: 1, totalCapacity: 2, usedCapacity: 0 },
      [
        ['Available', 'PodsReady'],
        ['Progressing', 'RollingOut'],
      ],
    ],
    [
      'no Pods',
      {},
      { replicas: 0, readyPods: 0, totalCapacity: 0 },
      [
        ['Available', 'NoPodsReady'],
        ['Progressing', 'RollingOut'],
      ],
    ],
    [
      'used may exceed total while Pods are lost',
      { pods: [ready], runsHoldingCapacity: 5 },
      { totalCapacity: 2, usedCapacity: 5 },
      [
        ['Available', 'PodsReady'],
        ['Progressing', 'RollingOut'],
      ],
    ],
    [
      'each Pod counts its own capacity while a change of runs rolls out',
      {
        pods: [
          { ...ready, capacity: 2 },
          { ...ready, capacity: 3 },
          { ...notReady, capacity: 3 },
        ],
      },
      { totalCapacity: 5 },
      [
        ['Available', 'PodsReady'],
        ['Progressing', 'RollingOut'],
      ],
    ],
    [
      'runs defaults to 1',
      { runsPerPod: undefined, pods: [ready, ready] },
      { totalCapacity: 2 },
      [
        ['Available', 'PodsReady'],
        ['Progressing', 'RollingOut'],
      ],
    ],
    [
      'a rollout not yet observed is progressing',
      { pods: [ready], rollout: { ...rolledOut, observedGeneration: 1 } },
      {},
      [
        ['Available', 'PodsReady'],
        ['Progressing', 'RollingOut'],
      ],
    ],
    [
      // The pass that rewrites the Deployment for a changed spec reads it from the cache, rolled out under the old template.
      'a Deployment rewritten this pass is progressing, whatever its cached status says',
      { pods: [ready], rollout: { ...rolledOut, current: false } },
      {},
      [
        ['Available', 'PodsReady'],
        ['Progressing', 'RollingOut'],
      ],
    ],
    [
      'an invalid spec says so in both conditions',
      { problems: ['bad name'] },
      {},
      [
        ['Available', 'InvalidSpec'],
        ['Progressing', 'InvalidSpec'],
      ],
    ],
  ])('%s', (_name, overrides, expected, conditions) => {
    const status = runtimeStatus(input(overrides));
    expect(status).toMatchObject({ observedGeneration: 1, ...expected });
    expect(status.conditions?.filter((c) => c.type !== 'RunsIsolated').map((c) => [c.type, c.reason])).toEqual(conditions);
  });

  it.each([
    ['perRunUser', 'PerRunUser', 'True', 'PerRunUser'],
    ['sharedUser', 'SharedUser', 'False', 'UserNamespacesOff'],
  ] as const)(
    'says how Runs on a Pod are kept apart (%s), in status.runIsolation and condition RunsIsolated',
    (isolation, shown, flag, reason) => {
      const status = runtimeStatus(input({ isolation }));
      expect(status.runIsolation).toBe(shown);
      expect(status.conditions?.find((c) => c.type === 'RunsIsolated')).toMatchObject({ status: flag, reason, observedGeneration: 1 });
    },
  );

  it('moves RunsIsolated lastTransitionTime only when user namespaces are turned on or off', () => {
    const first = runtimeStatus(input({}));
    const same = runtimeStatus(input({ previous: first, now: '2026-12-02T12:05:00Z' }));
    expect(same.conditions?.find((c) => c.type === 'RunsIsolated')?.lastTransitionTime).toBe(NOW);
    const off = runtimeStatus(input({ previous: same, isolation: 'sharedUser', now: '2026-12-02T12:06:00Z' }));
    expect(off.conditions?.find((c) => c.type === 'RunsIsolated')?.lastTransitionTime).toBe('2026-12-02T12:06:00Z');
    expect(off.conditions?.find((c) => c.type === 'RunsIsolated')?.message).toContain('can read and signal each other');
  });

  it('always gives the /scale selector and the Pending Runs; without spec.scaling no desiredReplicas and no Scaling condition', () => {
    const previous: RuntimeStatus = {
      desiredReplicas: 3,
      conditions: [{ type: 'Scaling', status: 'False', reason: 'Steady', message: 'x', lastTransitionTime: NOW }],
    };
    const status = runtimeStatus(input({ pendingRuns: 4, previous }));
    expect(status).toMatchObject({ pendingRuns: 4, selector: 'kruntimes.io/runtime=python,app.kubernetes.io/component=runtime' });
    expect(status.desiredReplicas).toBeUndefined();
    expect(status.conditions?.map((c) => c.type)).toEqual(['Available', 'Progressing', 'RunsIsolated']);
  });

  it('puts the autoscaler’s decision in: desiredReplicas and the Scaling condition', () => {
    const status = runtimeStatus(
      input({ pool: { desiredReplicas: 4, condition: { status: 'True', reason: 'ScaledUp', message: '12 Runs waiting: 1 -> 4 Pods' } } }),
    );
    expect(status.desiredReplicas).toBe(4);
    expect(status.conditions?.find((c) => c.type === 'Scaling')).toEqual({
      type: 'Scaling',
      status: 'True',
      reason: 'ScaledUp',
      message: '12 Runs waiting: 1 -> 4 Pods',
      lastTransitionTime: NOW,
      observedGeneration: 1,
    });
  });

  it('keeps lastTransitionTime while a condition holds, so a steady Runtime is not rewritten', () => {
    const first = runtimeStatus(input({ pods: [ready], rollout: rolledOut }));
    const second = runtimeStatus(input({ pods: [ready], rollout: rolledOut, previous: first, now: '2026-12-02T12:05:00Z' }));
    expect(sameStatus(first, second)).toBe(true);
    const third = runtimeStatus(input({ pods: [ready, ready], rollout: rolledOut, previous: second, now: '2026-12-02T12:06:00Z' }));
    expect(sameStatus(second, third)).toBe(false);
    expect(third.conditions?.find((c) => c.type === 'Available')?.lastTransitionTime).toBe(NOW);
  });
});

function scaling(reason: string, message: string): Condition {
  return { type: 'Scaling', status: 'True', reason, message, lastTransitionTime: NOW };
}

describe('decideStatusWrite', () => {
  const base: RuntimeStatus = { observedGeneration: 1, replicas: 2, readyPods: 2, totalCapacity: 8, usedCapacity: 3, conditions: [] };
  test.each<[string, Parameters<typeof decideStatusWrite>[0], ReturnType<typeof decideStatusWrite>]>([
    ['unchanged: nothing', { previous: base, next: { ...base }, lastWriteMs: undefined, nowMs: 0 }, { action: 'none' }],
    ['no status yet: write', { previous: undefined, next: base, lastWriteMs: undefined, nowMs: 0 }, { action: 'write' }],
    [
      'usage only, never written by this process: write',
      { previous: base, next: { ...base, usedCapacity: 4 }, lastWriteMs: undefined, nowMs: 0 },
      { action: 'write' },
    ],
    [
      'usage only, written 400 ms ago: 600 ms later',
      { previous: base, next: { ...base, usedCapacity: 4 }, lastWriteMs: 10_000, nowMs: 10_400 },
      { action: 'later', afterMs: 600 },
    ],
    [
      'usage only, written one interval ago: write',
      { previous: base, next: { ...base, usedCapacity: 4 }, lastWriteMs: 10_000, nowMs: 10_000 + USAGE_WRITE_INTERVAL_MS },
      { action: 'write' },
    ],
    [
      'Pending Runs only, written 400 ms ago: later',
      { previous: { ...base, pendingRuns: 3 }, next: { ...base, pendingRuns: 9 }, lastWriteMs: 10_000, nowMs: 10_400 },
      { action: 'later', afterMs: 600 },
    ],
    [
      'only the counts in the Scaling message, written 400 ms ago: later',
      {
        previous: { ...base, conditions: [scaling('ScaledUp', '12 Runs waiting')] },
        next: { ...base, conditions: [scaling('ScaledUp', '9 Runs waiting')] },
        lastWriteMs: 10_000,
        nowMs: 10_400,
      },
      { action: 'later', afterMs: 600 },
    ],
    [
      'a new Scaling reason, written just now: write at once',
      {
        previous: { ...base, conditions: [scaling('ScaledUp', '12 Runs waiting')] },
        next: { ...base, conditions: [scaling('ScaleDownDelayed', '1 of 3 Pods needed')] },
        lastWriteMs: 10_000,
        nowMs: 10_001,
      },
      { action: 'write' },
    ],
    [
      'another field changed, written just now: write at once',
      { previous: base, next: { ...base, usedCapacity: 4, readyPods: 1 }, lastWriteMs: 10_000, nowMs: 10_001 },
      { action: 'write' },
    ],
    [
      'a condition changed, written just now: write at once',
      {
        previous: base,
        next: {
          ...base,
          conditions: [
            {
              type: 'Available',
              status: 'True',
              reason: 'PodsReady',
              message: '2 of 2 Pods ready',
              lastTransitionTime: '2026-12-02T12:00:00Z',
            },
          ],
        },
        lastWriteMs: 10_000,
        nowMs: 10_001,
      },
      { action: 'write' },
    ],
  ])('%s', (_, input, expected) => {
    expect(decideStatusWrite(input)).toEqual(expected);
  });
});
