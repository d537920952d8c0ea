import type { RuntimeStatus } from '@kruntimes/api';
import { runtimeStatus, sameStatus } from './runtime-status.ts';
import type { RolloutView, RuntimeStatusInput } from './runtime-status.ts';

const NOW = '2026-12-02T12:00:00Z';
const rolledOut: RolloutView = {
  generation: 2,
  observedGeneration: 2,
  replicas: 3,
  updatedReplicas: 3,
  availableReplicas: 3,
  desiredReplicas: 3,
};

function input(overrides: Partial<RuntimeStatusInput>): RuntimeStatusInput {
  return {
    generation: 1,
    runsPerPod: 2,
    previous: undefined,
    pods: [],
    runsHoldingCapacity: 0,
    rollout: undefined,
    problems: [],
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
    expect(status.conditions?.map((c) => [c.type, c.reason])).toEqual(conditions);
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
