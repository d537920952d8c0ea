import type { Condition } from '@kruntimes/api';
import { findCondition, isConditionTrue, setCondition } from './conditions.ts';

const t0 = '2026-01-01T00:00:00Z';
const t1 = '2026-01-01T00:01:00Z';

describe('setCondition', () => {
  const ready = (status: 'True' | 'False', reason: string): Parameters<typeof setCondition>[1] => ({
    type: 'Ready',
    status,
    reason,
    message: reason,
  });

  it('adds a missing condition with lastTransitionTime = now and observedGeneration', () => {
    expect(setCondition(undefined, ready('False', 'Scheduled'), t0, 3)).toEqual([
      { type: 'Ready', status: 'False', reason: 'Scheduled', message: 'Scheduled', lastTransitionTime: t0, observedGeneration: 3 },
    ]);
  });

  it.each([
    ['status unchanged, reason changes: time stays', 'False', 'Registering', t0],
    ['status flips: time moves', 'True', 'FunctionRegistered', t1],
  ] as const)('%s', (_name, status, reason, expectedTime) => {
    const before = setCondition(undefined, ready('False', 'Scheduled'), t0, 1);
    const after = setCondition(before, ready(status, reason), t1, 2);
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ status, reason, lastTransitionTime: expectedTime, observedGeneration: 2 });
  });

  it('keeps other conditions, in place, and never modifies its input', () => {
    const other: Condition = { type: 'Other', status: 'True', reason: 'X', message: '', lastTransitionTime: t0 };
    const input: Condition[] = [other, { type: 'Ready', status: 'False', reason: 'A', message: '', lastTransitionTime: t0 }];
    const frozen = structuredClone(input);
    const output = setCondition(input, ready('True', 'B'), t1, undefined);
    expect(input).toEqual(frozen);
    expect(output.map((c) => c.type)).toEqual(['Other', 'Ready']);
    expect(output[0]).toEqual(other);
    expect(output[0]).not.toBe(other);
    expect(output[1]).not.toHaveProperty('observedGeneration');
  });

  it('finds and tests conditions', () => {
    const conditions = setCondition(undefined, ready('True', 'FunctionRegistered'), t0, 1);
    expect(findCondition(conditions, 'Ready')?.reason).toBe('FunctionRegistered');
    expect(findCondition(conditions, 'Missing')).toBeUndefined();
    expect(isConditionTrue(conditions, 'Ready')).toBe(true);
    expect(isConditionTrue(undefined, 'Ready')).toBe(false);
  });
});
