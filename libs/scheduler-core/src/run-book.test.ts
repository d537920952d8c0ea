import { RUN_REASONS } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import type { PassFacts } from './run-book.ts';
import { SETTLED_SILENT } from './placement.ts';
import { RunBook, creatorKey, passSignature } from './run-book.ts';

const KEY = 'ns/py';

/** A Pending Run `name` created at second `second`, by `user` when given. */
function run(name: string, second: number, extra: { user?: string; phase?: 'Pending' | 'Scheduled'; rv?: string } = {}): ReadonlyDeep<Run> {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: {
      name,
      namespace: 'ns',
      uid: `uid-${name}`,
      resourceVersion: extra.rv ?? '1',
      creationTimestamp: `2026-12-02T11:00:${String(second).padStart(2, '0')}Z`,
    },
    spec: {
      runtime: 'py',
      source: { inline: '' },
      mode: { task: {} },
      ...(extra.user === undefined ? {} : { creator: { username: extra.user, groups: ['g'] } }),
    },
    status: { phase: extra.phase ?? 'Pending' },
  };
}

const pending = (r: ReadonlyDeep<Run>): boolean => (r.status?.phase ?? 'Pending') === 'Pending';
const names = (runs: readonly ReadonlyDeep<Run>[]): string[] => runs.map((r) => r.metadata.name ?? '').sort();

describe('RunBook', () => {
  it('opens a changed Run; a pass settles what its plan settled and keeps the rest open while Pending', () => {
    const book = new RunBook();
    const [a, b, c] = [run('a', 1, { user: 'u' }), run('b', 2), run('c', 3, { phase: 'Scheduled' })];
    for (const r of [a, b, c]) book.changed(KEY, r);
    expect(book.signature(KEY)).toBeUndefined();
    expect(names(book.open(KEY))).toEqual(['a', 'b', 'c']);
    book.record(KEY, 'sig', [a, b, c], new Map([['uid-a', RUN_REASONS.noCapacity]]), pending);
    expect(book.signature(KEY)).toBe('sig');
    // b stays open (its reason is being written), c is not Pending: dropped.
    expect(names(book.open(KEY))).toEqual(['b']);
    expect(book.settledCounts(KEY)).toEqual({ runs: 1, byReason: new Map([[RUN_REASONS.noCapacity, 1]]) });
    expect(book.settledCreators(KEY)).toEqual([{ username: 'u', groups: ['g'] }]);
    // Its next version opens it again.
    book.changed(KEY, run('a', 1, { user: 'u', rv: '2' }));
    expect(names(book.open(KEY))).toEqual(['a', 'b']);
    expect(book.settledCounts(KEY).runs).toBe(0);
    expect(book.settledCreators(KEY)).toEqual([]);
  });

  it('does not settle a Run that changed while the pass planned it', () => {
    const book = new RunBook();
    const a = run('a', 1);
    book.changed(KEY, a);
    const newer = run('a', 1, { rv: '2' });
    book.changed(KEY, newer);
    book.record(KEY, 'sig', [a], new Map([['uid-a', SETTLED_SILENT]]), pending);
    expect(book.open(KEY)).toEqual([newer]);
  });

  it('opens the oldest Runs settled waiting for room, never those refused or silent', () => {
    const book = new RunBook();
    const runs = [run('d', 4), run('b', 2), run('a', 1), run('c', 3), run('e', 0), run('f', 5)];
    for (const r of runs) book.changed(KEY, r);
    const settled = new Map([
      ['uid-a', RUN_REASONS.noCapacity],
      ['uid-b', RUN_REASONS.runSlotCapReached],
      ['uid-c', RUN_REASONS.waitingForCapacity],
      ['uid-d', RUN_REASONS.noReadyPods],
      ['uid-e', RUN_REASONS.forbidden],
      ['uid-f', SETTLED_SILENT],
    ]);
    book.record(KEY, 'sig', runs, settled, pending);
    expect(book.open(KEY)).toEqual([]);
    expect(names(book.openOldestWaitingForRoom(KEY, 2))).toEqual(['a', 'b']);
    expect(names(book.open(KEY))).toEqual(['a', 'b']);
    expect(book.openOldestWaitingForRoom(KEY, 0)).toEqual([]);
    expect(names(book.openOldestWaitingForRoom(KEY, Number.POSITIVE_INFINITY))).toEqual(['c', 'd']);
    expect(book.settledCounts(KEY).runs).toBe(2);
  });

  it('unsettles everything for a pass of every Run; forgets a deleted Run and an empty Runtime', () => {
    const book = new RunBook();
    const [a, b] = [run('a', 1), run('b', 2)];
    book.changed(KEY, a);
    book.changed(KEY, b);
    book.record(KEY, 'sig', [a, b], new Map([['uid-a', SETTLED_SILENT]]), pending);
    book.unsettleAll(KEY);
    expect(book.signature(KEY)).toBeUndefined();
    expect(names(book.open(KEY))).toEqual(['a', 'b']);
    book.deleted(KEY, a);
    book.deleted(KEY, b);
    expect(book.open(KEY)).toEqual([]);
    expect(book.signature(KEY)).toBeUndefined();
    book.deleted('ns/other', a);
    book.unsettleAll('ns/other');
  });
});

describe('passSignature', () => {
  const base: PassFacts = { runtimeExists: true, blocked: undefined, access: new Map(), tail: RUN_REASONS.noCapacity };
  it.each<[string, Partial<PassFacts>, boolean]>([
    ['the same facts', {}, true],
    [
      'the same access, in another order',
      {
        access: new Map([
          ['b', { kind: 'allowed' }],
          ['a', { kind: 'denied' }],
        ]),
      },
      true,
    ],
    ['the Runtime gone', { runtimeExists: false }, false],
    ['blocked', { blocked: RUN_REASONS.runtimeSuspended }, false],
    [
      'a creator refused',
      {
        access: new Map([
          ['a', { kind: 'allowed' }],
          ['b', { kind: 'allowed' }],
        ]),
      },
      false,
    ],
    ['another tail', { tail: 'room' }, false],
  ])('%s', (_name, change, same) => {
    const before = {
      ...base,
      access: new Map([
        ['a', { kind: 'denied' }],
        ['b', { kind: 'allowed' }],
      ]),
    };
    expect(passSignature({ ...before, ...change }) === passSignature(before)).toBe(same);
  });
});

describe('creatorKey', () => {
  it.each<[string, Parameters<typeof creatorKey>[0], Parameters<typeof creatorKey>[0], boolean]>([
    ['the same user and groups', { username: 'u', groups: ['a'] }, { username: 'u', groups: ['a'] }, true],
    ['no groups is empty groups', { username: 'u' }, { username: 'u', groups: [] }, true],
    ['another group', { username: 'u', groups: ['a'] }, { username: 'u', groups: ['b'] }, false],
    ['a name that looks like a group list', { username: 'u","a' }, { username: 'u', groups: ['a'] }, false],
  ])('%s', (_name, a, b, same) => {
    expect(creatorKey(a) === creatorKey(b)).toBe(same);
  });
});
