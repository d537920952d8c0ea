import { IN_FLIGHT_RECHECK_MS, claimGate, decideDrainStep, drainFrom } from './drain.ts';
import type { DrainStep, DrainStepInput } from './drain.ts';

describe('claimGate', () => {
  it.each([
    ['running normally', { stopping: false, scaleDown: false }, undefined],
    ['stopping (SIGTERM or deleting)', { stopping: true, scaleDown: false }, /Pod pod-a is stopping/],
    ['marked for scale-down', { stopping: false, scaleDown: true }, /Pod pod-a is marked for scale-down/],
    ['both', { stopping: true, scaleDown: true }, /Pod pod-a is stopping/],
  ] as const)('%s', (_name, pod, refusal) => {
    const gate = claimGate(pod, 'pod-a');
    if (refusal === undefined) {
      expect(gate).toEqual({ open: true });
    } else {
      expect(gate).toMatchObject({ open: false, reason: 'PodDraining', message: expect.stringMatching(refusal) as string });
    }
  });
});

describe('decideDrainStep', () => {
  const drain = drainFrom(1_000, 300);
  const base: DrainStepInput = {
    action: 'watch',
    drain,
    nowMs: 2_000,
    inFlight: 0,
    movingSinceMs: undefined,
    invocationTimeoutMs: 60_000,
    executing: false,
  };
  const handOver = { type: 'handOver' } as const;

  it('sets the window from SIGTERM', () => {
    expect(drain).toEqual({ sinceMs: 1_000, deadlineMs: 301_000 });
  });

  it.each<[string, Partial<DrainStepInput>, Partial<DrainStep>]>([
    ['not draining: as planned', { drain: undefined }, { type: 'asPlanned' }],
    ['a Ready function, nothing in flight: hand over now', {}, { ...handOver, why: 'no invocation in flight' }],
    ['a function still registering: hand over (nothing served yet)', { action: 'register' }, handOver],
    [
      'a Ready function with an invocation in flight: wait for it',
      { inFlight: 1, movingSinceMs: 1_500 },
      { type: 'waitInFlight', requeueAfterMs: IN_FLIGHT_RECHECK_MS },
    ],
    ['the first look with one in flight: wait', { inFlight: 1 }, { type: 'waitInFlight' }],
    [
      'an invocation past its timeout: hand over anyway',
      { inFlight: 1, movingSinceMs: 1_500, nowMs: 61_500 },
      { ...handOver, why: 'an invocation outlived its timeout' },
    ],
    ['a running task within the window: runs on', { action: 'execute', executing: true, nowMs: 300_999 }, { type: 'asPlanned' }],
    ['a running task at the end of the window: stop it', { action: 'execute', executing: true, nowMs: 301_000 }, { type: 'stopTask' }],
    ['a task claimed but not started: as planned', { action: 'execute', executing: false, nowMs: 400_000 }, { type: 'asPlanned' }],
    ['a claim: as planned (the gate refuses it)', { action: 'claim' }, { type: 'asPlanned' }],
    ['cancel keeps its own step', { action: 'cancel' }, { type: 'asPlanned' }],
    ['lifetime timeout keeps its own step', { action: 'expire' }, { type: 'asPlanned' }],
    ['deletion keeps its own step', { action: 'finalize' }, { type: 'asPlanned' }],
    ['an unwritten outcome is written', { action: 'writeOutcome' }, { type: 'asPlanned' }],
    ['a leftover finalizer is removed', { action: 'removeFinalizer' }, { type: 'asPlanned' }],
  ])('%s', (_name, input, expected) => {
    expect(decideDrainStep({ ...base, ...input })).toMatchObject(expected);
  });
});
