import { checkpointAttemptsNeeded, decideArtifactCleanup } from './cleanup.ts';
import type { LiveRunAttempt } from './cleanup.ts';

const NS = 'krt/team-a/';
const NOW = new Date('2026-12-03T12:00:00Z');
const HOUR = 3600_000;

function ago(ms: number): Date {
  return new Date(NOW.getTime() - ms);
}

const running = (attempt: number | undefined, checkpointAttempts: number[] = []): LiveRunAttempt => ({
  attempt,
  terminal: false,
  checkpointAttempts,
});
const finished = (attempt: number | undefined, checkpointAttempts: number[] = []): LiveRunAttempt => ({
  attempt,
  terminal: true,
  checkpointAttempts,
});

test.each<[string, string, Date, Record<string, LiveRunAttempt>, number, string | undefined]>([
  // [case, key, lastModified, runs, retentionMs, expected reason or undefined to keep]
  ['deleted Run, older than retention', `${NS}gone/1/out.csv`, ago(2 * HOUR), {}, HOUR, 'RunDeleted'],
  ['deleted Run, exactly at retention', `${NS}gone/1/out.csv`, ago(HOUR), {}, HOUR, 'RunDeleted'],
  ['deleted Run, within retention', `${NS}gone/1/out.csv`, ago(HOUR / 2), {}, HOUR, undefined],
  ['deleted Run, retention 0', `${NS}gone/3/out.csv`, NOW, {}, 0, 'RunDeleted'],
  ['running Run, current attempt', `${NS}r1/2/out.csv`, ago(10 * HOUR), { r1: running(2) }, 0, undefined],
  ['running Run, earlier attempt', `${NS}r1/1/out.csv`, NOW, { r1: running(2) }, 10 * HOUR, 'SupersededAttempt'],
  // An attempt ahead of the cache (status.attempt not yet observed) is the next attempt's own.
  ['running Run, later attempt than the cache knows', `${NS}r1/3/out.csv`, NOW, { r1: running(2) }, 0, undefined],
  ['running Run without an attempt yet', `${NS}r1/1/out.csv`, NOW, { r1: running(undefined) }, 0, undefined],
  ['terminal Run, final attempt', `${NS}r1/2/out.csv`, ago(100 * HOUR), { r1: finished(2) }, 0, undefined],
  ['terminal Run, earlier attempt', `${NS}r1/1/out.csv`, NOW, { r1: finished(2) }, HOUR, 'SupersededAttempt'],
  ['terminal Run, later attempt than the final one', `${NS}r1/3/out.csv`, NOW, { r1: finished(2) }, HOUR, 'SupersededAttempt'],
  ['terminal Run that never started an attempt', `${NS}r1/1/out.csv`, NOW, { r1: finished(undefined) }, HOUR, 'SupersededAttempt'],
  // Waiting for input: the checkpoint of the attempt named in status.waitingInput / status.resume stays while the Run is active.
  ['waiting Run, its own checkpoint', `${NS}r1/2/krt.checkpoint`, NOW, { r1: running(2, [2]) }, 0, undefined],
  ['continuation, the checkpoint it resumes from', `${NS}r1/1/krt.checkpoint`, NOW, { r1: running(2, [1]) }, 0, undefined],
  ['continuation retried, the checkpoint it resumes from', `${NS}r1/1/krt.checkpoint`, NOW, { r1: running(4, [1]) }, 0, undefined],
  ['continuation, other objects of the checkpoint attempt', `${NS}r1/1/out.csv`, NOW, { r1: running(2, [1]) }, 0, 'SupersededAttempt'],
  [
    'continuation, a checkpoint of another earlier attempt',
    `${NS}r1/1/krt.checkpoint`,
    NOW,
    { r1: running(3, [2]) },
    0,
    'SupersededAttempt',
  ],
  ['continuation waiting again, both checkpoints named', `${NS}r1/1/krt.checkpoint`, NOW, { r1: running(3, [3, 1]) }, 0, undefined],
  ['active Run naming no checkpoint, an earlier checkpoint', `${NS}r1/1/krt.checkpoint`, NOW, { r1: running(2) }, 0, 'SupersededAttempt'],
  ['terminal Run, the checkpoint it resumed from', `${NS}r1/1/krt.checkpoint`, NOW, { r1: finished(2, [1]) }, 0, 'SupersededAttempt'],
  ['not under the namespace prefix', 'krt/team-b/gone/1/out.csv', ago(100 * HOUR), {}, 0, undefined],
  ['not an artifact key: too few segments', `${NS}gone/out.csv`, ago(100 * HOUR), {}, 0, undefined],
  ['not an artifact key: too many segments', `${NS}gone/1/x/out.csv`, ago(100 * HOUR), {}, 0, undefined],
  ['not an artifact key: attempt 0', `${NS}gone/0/out.csv`, ago(100 * HOUR), {}, 0, undefined],
  ['not an artifact key: invalid artifact ID', `${NS}gone/1/Out.CSV`, ago(100 * HOUR), {}, 0, undefined],
])('%s', (_case, key, lastModified, runs, retentionMs, expected) => {
  const decision = decideArtifactCleanup({
    objects: [{ key, lastModified }],
    namespacePrefix: NS,
    runs: new Map(Object.entries(runs)),
    now: NOW,
    retentionMs,
    unknownRunGraceMs: 0,
  });
  expect(decision.remove).toEqual(expected === undefined ? [] : [{ key, reason: expected }]);
});

test('nextExpiryMs is the soonest retention end among kept objects of deleted Runs', () => {
  const decision = decideArtifactCleanup({
    objects: [
      { key: `${NS}a/1/x`, lastModified: ago(HOUR / 2) },
      { key: `${NS}b/1/x`, lastModified: ago(HOUR / 4) },
      { key: `${NS}c/1/x`, lastModified: ago(2 * HOUR) },
      { key: `${NS}live/1/x`, lastModified: ago(0) },
    ],
    namespacePrefix: NS,
    runs: new Map([['live', running(1)]]),
    now: NOW,
    retentionMs: HOUR,
    unknownRunGraceMs: 0,
  });
  expect(decision).toEqual({ remove: [{ key: `${NS}c/1/x`, reason: 'RunDeleted' }], nextExpiryMs: HOUR / 2 });
});

test.each<[string, Parameters<typeof checkpointAttemptsNeeded>[0], number[]]>([
  ['no status', undefined, []],
  ['neither waiting nor continuing', {}, []],
  [
    'waiting',
    { waitingInput: { schema: 'true', checkpoint: { attempt: 2, digest: `sha256:${'a'.repeat(64)}`, size: 1 }, since: '' } },
    [2],
  ],
  [
    'continuing',
    { resume: { checkpoint: { attempt: 1, digest: '', size: 1 }, responseId: 'r', runInput: 'i', input: '{}', attempt: 2 } },
    [1],
  ],
  [
    'continuing and waiting again',
    {
      waitingInput: { schema: 'true', checkpoint: { attempt: 3, digest: '', size: 1 }, since: '' },
      resume: { checkpoint: { attempt: 1, digest: '', size: 1 }, responseId: 'r', runInput: 'i', input: '{}', attempt: 2 },
    },
    [3, 1],
  ],
])('checkpointAttemptsNeeded: %s', (_case, status, expected) => {
  expect(checkpointAttemptsNeeded(status)).toEqual(expected);
});

test('nothing waiting: nextExpiryMs is undefined', () => {
  expect(
    decideArtifactCleanup({ objects: [], namespacePrefix: NS, runs: new Map(), now: NOW, retentionMs: HOUR, unknownRunGraceMs: 0 }),
  ).toEqual({
    remove: [],
    nextExpiryMs: undefined,
  });
});

test.each([
  ['younger than the grace: the Run may be too new for the cache', ago(30_000), 0, undefined],
  ['older than the grace, retention 0', ago(61_000), 0, 'RunDeleted'],
  ['older than the grace, within a longer retention', ago(61_000), HOUR, undefined],
])('a Run missing from the cache, object %s', (_case, lastModified, retentionMs, expected) => {
  const key = `${NS}new/1/out.csv`;
  const decision = decideArtifactCleanup({
    objects: [{ key, lastModified }],
    namespacePrefix: NS,
    runs: new Map(),
    now: NOW,
    retentionMs,
    unknownRunGraceMs: 60_000,
  });
  expect(decision.remove).toEqual(expected === undefined ? [] : [{ key, reason: expected }]);
});
