// The soak's planned-disruption invariant (pure; kept beside the soak, which has no unit project).
import { describe, expect, it } from '@jest/globals';
import type { FaultRecord } from './faults.ts';
import { plannedMoveViolations } from './planned.ts';
import type { AttemptRise } from './planned.ts';

const fault = (kind: FaultRecord['kind'], start: number, heldRuns: string[]): FaultRecord => ({
  kind,
  target: 'py',
  start,
  end: start + 1_000,
  affectedRuns: [],
  heldRuns,
});
const rise = (run: string, at: number, from: number, to: number, plannedMoves: number): AttemptRise => ({
  run,
  at,
  from,
  to,
  plannedMoves,
});

describe('plannedMoveViolations', () => {
  const cases: {
    name: string;
    faults: FaultRecord[];
    rises: AttemptRise[];
    phases?: [string, 'Interrupted' | 'Succeeded'][];
    expected: number;
  }[] = [
    {
      name: 'a drained function moved as a planned move',
      faults: [fault('rollout', 0, ['fn'])],
      rises: [rise('fn', 500, 1, 2, 1)],
      expected: 0,
    },
    {
      name: 'a drained function that spent an attempt',
      faults: [fault('rollout', 0, ['fn'])],
      rises: [rise('fn', 500, 1, 2, 0)],
      expected: 1,
    },
    {
      name: 'a rise long after the fault is not its',
      faults: [fault('evict-pod', 0, ['fn'])],
      rises: [rise('fn', 120_000, 1, 2, 0)],
      expected: 0,
    },
    { name: 'a Run the fault did not hold', faults: [fault('scale-down', 0, ['fn'])], rises: [rise('other', 500, 1, 2, 0)], expected: 0 },
    {
      name: 'an unplanned fault hit the Run too',
      faults: [fault('scale-down', 0, ['fn']), fault('kill-runtimed', 200, ['fn'])],
      rises: [rise('fn', 500, 1, 2, 0)],
      expected: 0,
    },
    {
      // Seed 1733748006: the watch delivered task-00119's bind (attempt 0 -> 1) just after its Pod was chosen for eviction.
      name: "a task's first bind during the fault is its first attempt, none spent",
      faults: [fault('evict-pod', 0, ['t'])],
      rises: [rise('t', 500, 0, 1, 0)],
      expected: 0,
    },
    {
      name: 'a task retried after its first attempt spent one',
      faults: [fault('evict-pod', 0, ['t'])],
      rises: [rise('t', 500, 1, 2, 0)],
      expected: 1,
    },
    {
      name: 'a first bind seen together with a second attempt spent one',
      faults: [fault('rollout', 0, ['t'])],
      rises: [rise('t', 500, 0, 2, 0)],
      expected: 1,
    },
    {
      name: 'a task of a drained Pod cut short',
      faults: [fault('evict-pod', 0, ['t'])],
      rises: [],
      phases: [['t', 'Interrupted']],
      expected: 1,
    },
    {
      name: 'a task of a drained Pod that finished',
      faults: [fault('evict-pod', 0, ['t'])],
      rises: [],
      phases: [['t', 'Succeeded']],
      expected: 0,
    },
    {
      name: 'a task an unplanned fault hit too',
      faults: [fault('evict-pod', 0, ['t']), fault('delete-pod', 100, ['t'])],
      rises: [],
      phases: [['t', 'Interrupted']],
      expected: 0,
    },
    {
      name: 'unplanned faults alone are not checked here',
      faults: [fault('delete-pod', 0, ['fn'])],
      rises: [rise('fn', 500, 1, 2, 0)],
      expected: 0,
    },
  ];
  it.each(cases)('$name', ({ faults, rises, phases, expected }) => {
    expect(plannedMoveViolations(faults, rises, new Map(phases ?? []))).toHaveLength(expected);
  });
});
