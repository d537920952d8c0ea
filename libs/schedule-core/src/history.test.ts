import { runsToPrune } from './history.ts';
import type { FinishedScheduleRun } from './history.ts';

const run = (name: string, succeeded: boolean, finishedAt: number): FinishedScheduleRun => ({
  name,
  uid: `uid-${name}`,
  resourceVersion: '1',
  succeeded,
  finishedAt,
});

describe('runsToPrune', () => {
  const runs = [run('s1', true, 1), run('s2', true, 2), run('s3', true, 3), run('f1', false, 1), run('f2', false, 2)];

  it.each([
    ['within both limits: nothing', 3, 2, []],
    ['the oldest succeeded past the limit', 2, 2, ['s1']],
    ['the oldest failed past the limit', 3, 1, ['f1']],
    ['limits of zero delete every finished Run', 0, 0, ['s3', 's2', 's1', 'f2', 'f1']],
    ['a limit above the count keeps all', 10, 10, []],
  ])('%s', (_what, successful, failed, expected) => {
    expect(runsToPrune(runs, { successfulRunsHistoryLimit: successful, failedRunsHistoryLimit: failed }).map((r) => r.name)).toEqual(
      expected,
    );
  });

  it('breaks ties of the finish time by name, so two replicas prune the same Runs', () => {
    const tied = [run('b', true, 5), run('a', true, 5), run('c', true, 5)];
    expect(runsToPrune(tied, { successfulRunsHistoryLimit: 1, failedRunsHistoryLimit: 1 }).map((r) => r.name)).toEqual(['b', 'a']);
  });

  it('does not change its input', () => {
    const input = [run('x', true, 1), run('y', true, 2)];
    const copy = structuredClone(input);
    runsToPrune(input, { successfulRunsHistoryLimit: 0, failedRunsHistoryLimit: 0 });
    expect(input).toEqual(copy);
  });
});
