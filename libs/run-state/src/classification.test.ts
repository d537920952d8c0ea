import { RUN_PHASES } from '@kruntimes/api';
import type { RunPhase } from '@kruntimes/api';
import {
  acceptsInvokes,
  classify,
  countByPhase,
  finishKind,
  hasOwner,
  holdsCapacity,
  isActive,
  isSuccessful,
  isTerminal,
  mayBeCollected,
  mayTurnReady,
  phaseMetricLabel,
  waitOutcome,
} from './classification.ts';

interface Expected {
  terminal: boolean;
  owner: boolean;
  /** An owner is bringing it up: an invoke may look again before refusing. */
  turnsReady: boolean;
  capacity: boolean;
  /** With the registration-cleanup finalizer still on the Run. */
  capacityWhileCleanupPending: boolean;
  invokes: boolean;
  waitReady: string;
  waitFinished: string;
  label: string;
}

// The specification, phase by phase. Every classification of every phase is listed.
const expected: Record<RunPhase, Expected> = {
  Pending: {
    terminal: false,
    owner: false,
    turnsReady: false,
    capacity: false,
    capacityWhileCleanupPending: false,
    invokes: false,
    waitReady: 'keepWaiting',
    waitFinished: 'keepWaiting',
    label: 'pending',
  },
  Scheduled: {
    terminal: false,
    owner: true,
    turnsReady: true,
    capacity: true,
    capacityWhileCleanupPending: true,
    invokes: false,
    waitReady: 'keepWaiting',
    waitFinished: 'keepWaiting',
    label: 'scheduled',
  },
  Running: {
    terminal: false,
    owner: true,
    turnsReady: true,
    capacity: true,
    capacityWhileCleanupPending: true,
    invokes: false,
    waitReady: 'keepWaiting',
    waitFinished: 'keepWaiting',
    label: 'running',
  },
  Ready: {
    terminal: false,
    owner: true,
    turnsReady: false,
    capacity: true,
    capacityWhileCleanupPending: true,
    invokes: true,
    waitReady: 'satisfied',
    waitFinished: 'keepWaiting',
    label: 'ready',
  },
  WaitingInput: {
    terminal: false,
    owner: false,
    turnsReady: false,
    capacity: false,
    capacityWhileCleanupPending: false,
    invokes: false,
    waitReady: 'keepWaiting',
    waitFinished: 'keepWaiting',
    label: 'waiting_input',
  },
  Succeeded: {
    terminal: true,
    owner: false,
    turnsReady: false,
    capacity: false,
    capacityWhileCleanupPending: true,
    invokes: false,
    waitReady: 'unreachable',
    waitFinished: 'satisfied',
    label: 'succeeded',
  },
  Failed: {
    terminal: true,
    owner: false,
    turnsReady: false,
    capacity: false,
    capacityWhileCleanupPending: true,
    invokes: false,
    waitReady: 'unreachable',
    waitFinished: 'satisfied',
    label: 'failed',
  },
  Timeout: {
    terminal: true,
    owner: false,
    turnsReady: false,
    capacity: false,
    capacityWhileCleanupPending: true,
    invokes: false,
    waitReady: 'unreachable',
    waitFinished: 'satisfied',
    label: 'timeout',
  },
  Cancelled: {
    terminal: true,
    owner: false,
    turnsReady: false,
    capacity: false,
    capacityWhileCleanupPending: true,
    invokes: false,
    waitReady: 'unreachable',
    waitFinished: 'satisfied',
    label: 'cancelled',
  },
  Interrupted: {
    terminal: true,
    owner: false,
    turnsReady: false,
    capacity: false,
    capacityWhileCleanupPending: true,
    invokes: false,
    waitReady: 'unreachable',
    waitFinished: 'satisfied',
    label: 'interrupted',
  },
};

describe.each(RUN_PHASES.map((phase) => [phase, expected[phase]] as const))('phase %s', (phase, want) => {
  it('isTerminal / isActive / mayBeCollected', () => {
    expect(isTerminal(phase)).toBe(want.terminal);
    expect(isActive(phase)).toBe(!want.terminal);
    expect(mayBeCollected(phase)).toBe(want.terminal);
  });

  it('hasOwner', () => {
    expect(hasOwner(phase)).toBe(want.owner);
  });

  it('mayTurnReady', () => {
    expect(mayTurnReady(phase)).toBe(want.turnsReady);
  });

  it('holdsCapacity, with and without the registration-cleanup finalizer', () => {
    expect(holdsCapacity(phase)).toBe(want.capacity);
    expect(holdsCapacity(phase, false)).toBe(want.capacity);
    expect(holdsCapacity(phase, true)).toBe(want.capacityWhileCleanupPending);
  });

  it.each([
    [true, false, want.invokes],
    [false, false, false],
    [true, true, false],
    [false, true, false],
  ])('acceptsInvokes(readyTrue=%s, deleting=%s) is %s', (readyTrue, deleting, result) => {
    expect(acceptsInvokes(phase, readyTrue, deleting)).toBe(result);
  });

  it('waitOutcome for ready and finished', () => {
    expect(waitOutcome(phase, 'ready')).toBe(want.waitReady);
    expect(waitOutcome(phase, 'finished')).toBe(want.waitFinished);
  });

  it('metric label and success', () => {
    expect(phaseMetricLabel(phase)).toBe(want.label);
    expect(isSuccessful(phase)).toBe(phase === 'Succeeded');
  });

  it('has exactly one class', () => {
    expect(['queued', 'assigned', 'executing', 'serving', 'parked', 'terminal']).toContain(classify(phase));
  });
});

test.each<[RunPhase, ReturnType<typeof finishKind>]>([
  ['Pending', undefined],
  ['Scheduled', undefined],
  ['Running', undefined],
  ['Ready', undefined],
  ['WaitingInput', undefined],
  ['Succeeded', 'succeeded'],
  ['Failed', 'failed'],
  ['Timeout', 'timedOut'],
  ['Cancelled', 'cancelled'],
  ['Interrupted', 'interrupted'],
])('finishKind(%s) is %s, and defined exactly for the terminal phases', (phase, kind) => {
  expect(finishKind(phase)).toBe(kind);
  expect(finishKind(phase) !== undefined).toBe(isTerminal(phase));
});

describe('countByPhase', () => {
  it('zero-fills every phase and counts', () => {
    const counts = countByPhase(['Ready', 'Ready', 'Failed']);
    expect(Object.keys(counts).sort()).toEqual([...RUN_PHASES].sort());
    expect(counts.Ready).toBe(2);
    expect(counts.Failed).toBe(1);
    expect(counts.Pending).toBe(0);
  });
});
