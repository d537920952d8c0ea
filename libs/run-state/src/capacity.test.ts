import { REGISTRATION_CLEANUP_FINALIZER, RUN_PHASES } from '@kruntimes/api';
import type { RunPhase } from '@kruntimes/api';
import { capacityHold } from './capacity.ts';
import type { CapacityHold, CapacityHolder } from './capacity.ts';

const POD = 'pod-uid-a';

function holder(phase: RunPhase | undefined, assigned: boolean, cleanupPending: boolean): CapacityHolder {
  return {
    metadata: cleanupPending ? { finalizers: ['other.example/f', REGISTRATION_CLEANUP_FINALIZER] } : { finalizers: ['other.example/f'] },
    status: { ...(phase === undefined ? {} : { phase }), ...(assigned ? { assignedPodUID: POD } : {}) },
  };
}

// The specification, phase by phase: [hold of an assigned Run, hold of one that still carries the cleanup finalizer].
const expected: Record<RunPhase, [CapacityHold | undefined, CapacityHold | undefined]> = {
  Pending: [undefined, undefined],
  Scheduled: [
    { podUID: POD, claimed: false },
    { podUID: POD, claimed: false },
  ],
  Running: [
    { podUID: POD, claimed: true },
    { podUID: POD, claimed: true },
  ],
  Ready: [
    { podUID: POD, claimed: true },
    { podUID: POD, claimed: true },
  ],
  WaitingInput: [undefined, undefined],
  Succeeded: [undefined, { podUID: POD, claimed: true }],
  Failed: [undefined, { podUID: POD, claimed: true }],
  Timeout: [undefined, { podUID: POD, claimed: true }],
  Cancelled: [undefined, { podUID: POD, claimed: true }],
  Interrupted: [undefined, { podUID: POD, claimed: true }],
};

describe('capacityHold', () => {
  it.each(RUN_PHASES.map((phase) => [phase, ...expected[phase]] as const))(
    '%s: without the cleanup finalizer %j, with it %j',
    (phase, plain, cleanupPending) => {
      expect(capacityHold(holder(phase, true, false))).toEqual(plain);
      expect(capacityHold(holder(phase, true, true))).toEqual(cleanupPending);
    },
  );

  it.each(RUN_PHASES)('%s: a Run without an assignment holds nothing, finalizer or not', (phase) => {
    expect(capacityHold(holder(phase, false, false))).toBeUndefined();
    expect(capacityHold(holder(phase, false, true))).toBeUndefined();
  });

  it('a Run with no status yet (Pending) or an empty Pod UID holds nothing', () => {
    expect(capacityHold({ metadata: {} })).toBeUndefined();
    expect(capacityHold(holder(undefined, true, true))).toBeUndefined();
    expect(capacityHold({ metadata: {}, status: { phase: 'Running', assignedPodUID: '' } })).toBeUndefined();
  });
});
