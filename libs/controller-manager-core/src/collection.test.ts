import type { RunPhase } from '@kruntimes/api';
import { historyToCollect, ttlDecision } from './collection.ts';
import type { CollectableRun } from './collection.ts';

const NOW = Date.parse('2026-12-02T12:00:00Z');

function run(name: string, phase: RunPhase, extra: Partial<CollectableRun> = {}): CollectableRun {
  return {
    name,
    uid: `uid-${name}`,
    resourceVersion: '1',
    phase,
    creationTimestamp: '2026-12-02T10:00:00Z',
    completionTime: undefined,
    ttlSecondsAfterFinished: undefined,
    deleting: false,
    ...extra,
  };
}

describe('ttlDecision', () => {
  it.each<[string, CollectableRun, ReturnType<typeof ttlDecision>]>([
    ['no TTL', run('a', 'Succeeded', { completionTime: '2026-12-02T11:00:00Z' }), { action: 'keep' }],
    ['expired', run('a', 'Succeeded', { completionTime: '2026-12-02T11:59:00Z', ttlSecondsAfterFinished: 60 }), { action: 'delete' }],
    [
      'TTL 0 deletes at once',
      run('a', 'Failed', { completionTime: '2026-12-02T12:00:00Z', ttlSecondsAfterFinished: 0 }),
      { action: 'delete' },
    ],
    [
      'not yet',
      run('a', 'Cancelled', { completionTime: '2026-12-02T11:59:30Z', ttlSecondsAfterFinished: 60 }),
      { action: 'wait', afterMs: 30_000 },
    ],
    ['an active Run with an expired TTL is never deleted', run('a', 'Running', { ttlSecondsAfterFinished: 0 }), { action: 'keep' }],
    ['nor a Ready function Run', run('a', 'Ready', { ttlSecondsAfterFinished: 0 }), { action: 'keep' }],
    ['nor a Pending one', run('a', 'Pending', { ttlSecondsAfterFinished: 0 }), { action: 'keep' }],
    ['nor one waiting for input', run('a', 'WaitingInput', { ttlSecondsAfterFinished: 0 }), { action: 'keep' }],
    [
      'a Run already being deleted',
      run('a', 'Succeeded', { completionTime: '2026-12-02T11:00:00Z', ttlSecondsAfterFinished: 0, deleting: true }),
      { action: 'keep' },
    ],
    [
      'a finished Run without completionTime counts from its creation',
      run('a', 'Interrupted', { ttlSecondsAfterFinished: 3600 }),
      { action: 'delete' },
    ],
  ])('%s', (_name, candidate, expected) => {
    expect(ttlDecision(candidate, NOW)).toEqual(expected);
  });
});

describe('historyToCollect', () => {
  const at = (minute: number): string => `2026-12-02T11:${String(minute).padStart(2, '0')}:00Z`;
  const runs = [
    run('f1', 'Succeeded', { completionTime: at(1) }),
    run('f2', 'Failed', { completionTime: at(2) }),
    run('f3', 'Timeout', { completionTime: at(3) }),
    run('f4', 'Cancelled', { completionTime: at(4) }),
    run('active1', 'Running'),
    run('active2', 'Ready'),
    run('active3', 'Pending'),
    run('gone', 'Succeeded', { completionTime: at(0), deleting: true }),
  ];
  it.each<[number, string[]]>([
    [0, ['f1', 'f2', 'f3', 'f4']],
    [2, ['f1', 'f2']],
    [4, []],
    [10, []],
  ])('keeping %d: collects only finished Runs beyond the newest kept, oldest first', (keep, expected) => {
    expect(historyToCollect(runs, keep).map((r) => r.name)).toEqual(expected);
  });
});
