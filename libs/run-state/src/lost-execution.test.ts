import { decideLostExecutionReason } from './lost-execution.ts';

describe('decideLostExecutionReason', () => {
  it.each([
    ['the Runtime Server died during the execution', true, 'RuntimeServerLost'],
    ['a loss whose cause is not known (the generic OwnerLost)', false, undefined],
  ])('%s', (_name, died, expected) => {
    expect(decideLostExecutionReason(died)).toBe(expected);
  });
});
