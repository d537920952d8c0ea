// The soak's choice of fault kinds (pure; kept beside the soak, which has no unit project).
import { describe, expect, it } from '@jest/globals';
import { FAULT_KINDS, parseFaultKinds } from './kinds.ts';

describe('parseFaultKinds', () => {
  const cases: { name: string; text: string | undefined; expected: readonly string[] }[] = [
    { name: 'absent: every kind, in order (a seed replays as before)', text: undefined, expected: FAULT_KINDS },
    { name: 'empty: every kind', text: ' ', expected: FAULT_KINDS },
    {
      name: 'the planned ones, in the kinds order',
      text: 'evict-pod,rollout,scale-down',
      expected: ['rollout', 'scale-down', 'evict-pod'],
    },
    { name: 'planned stands for the three', text: 'planned', expected: ['rollout', 'scale-down', 'evict-pod'] },
    { name: 'spaces and repeats', text: ' rollout , rollout,delete-pod', expected: ['delete-pod', 'rollout'] },
  ];
  it.each(cases)('$name', ({ text, expected }) => {
    expect(parseFaultKinds(text)).toEqual(expected);
  });

  it('rejects an unknown kind, naming it and listing the known ones', () => {
    expect(() => parseFaultKinds('rollout,rolout')).toThrow(/unknown fault kind rolout; known: delete-pod, .*, evict-pod/);
  });

  it('rejects an empty item', () => {
    expect(() => parseFaultKinds('rollout,,evict-pod')).toThrow(/unknown fault kind \(empty\)/);
  });
});
