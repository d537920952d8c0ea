import type { Run, RunPhase } from '@kruntimes/api';
import { LastPhases, tallyTasks } from './run-tally.ts';

function run(name: string, phase: RunPhase | undefined, uid = `uid-${name}`): Pick<Run, 'metadata' | 'status'> {
  return { metadata: { name, uid }, status: phase === undefined ? {} : { phase } };
}

test('the last phase of each UID is kept after a DELETED event, and a later list cannot undo the deletion', () => {
  const seen = new LastPhases();
  seen.observe('ADDED', run('a', undefined));
  seen.observe('MODIFIED', run('a', 'Running'));
  seen.observe('DELETED', run('a', 'Succeeded'));
  seen.observe('ADDED', run('b', 'Scheduled'));
  seen.observe('DELETED', run('c', 'Failed'));
  seen.observe('LISTED', run('c', 'Failed'));
  expect([...seen.byName().values()]).toEqual([
    { uid: 'uid-a', name: 'a', phase: 'Succeeded', deleted: true },
    { uid: 'uid-b', name: 'b', phase: 'Scheduled', deleted: false },
    { uid: 'uid-c', name: 'c', phase: 'Failed', deleted: true },
  ]);
});

describe('tallyTasks', () => {
  const seen = new LastPhases();
  // Seen to the end, then collected: counted by the phase it ended in.
  seen.observe('MODIFIED', run('done', 'Succeeded'));
  seen.observe('DELETED', run('done', 'Succeeded'));
  seen.observe('MODIFIED', run('timedout', 'Timeout'));
  // Terminal and still there.
  seen.observe('MODIFIED', run('failed', 'Failed'));
  // Last seen Running, gone at the end: collected, so finished, but its end was missed.
  seen.observe('MODIFIED', run('missed', 'Running'));
  // Last seen Running and still Running at the end: lost.
  seen.observe('MODIFIED', run('stuck', 'Running'));
  // Pending at the end after the settle bound: lost too.
  seen.observe('ADDED', run('queued', 'Pending'));
  const present = new Set(['failed', 'stuck', 'queued', 'not-created-by-the-soak']);
  const created = ['done', 'timedout', 'failed', 'missed', 'stuck', 'queued', 'never-seen'];

  const tally = tallyTasks(created, seen.byName(), present);

  test('every created Run is counted once, by the last phase seen', () => {
    expect(tally.created).toBe(7);
    expect(Object.fromEntries(tally.byLastPhase)).toEqual({ Succeeded: 1, Timeout: 1, Failed: 1, Running: 2, Pending: 1, unseen: 1 });
    expect([...tally.byLastPhase.values()].reduce((a, b) => a + b, 0)).toBe(created.length);
  });

  test('gone without a terminal version seen: finished unseen, not lost', () => {
    expect(tally.finishedUnseen).toEqual(['missed', 'never-seen']);
  });

  test('lost: created, and neither terminal nor gone at the end', () => {
    expect(tally.lost).toEqual(['stuck', 'queued']);
  });
});
