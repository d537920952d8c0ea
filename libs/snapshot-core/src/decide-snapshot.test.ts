import { createHash } from 'node:crypto';
import { BOUNDS } from '@kruntimes/api';
import type { Run, RunStatus } from '@kruntimes/api';
import {
  SOURCE_POLL_MS,
  decideSnapshotConfigMap,
  decideSource,
  needsSnapshot,
  snapshotConfigMap,
  snapshotMismatch,
  sourceDigest,
} from './decide-snapshot.ts';
import type { SourceRead } from './decide-snapshot.ts';

const TEXT = 'print("hello")\n';
const DIGEST = `sha256:${createHash('sha256').update(TEXT).digest('hex')}`;
const NOW_MS = Date.parse('2026-06-01T12:00:00Z');
const WAIT_MS = 300_000;

function run(source: Run['spec']['source'], status?: RunStatus, spec: Partial<Run['spec']> = {}): Run {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name: 'job', namespace: 'ns', uid: 'run-uid', generation: 1 },
    spec: { runtime: 'python', source, mode: { task: {} }, ...spec },
    ...(status === undefined ? {} : { status }),
  };
}

const fromConfigMap = { configMapKeyRef: { name: 'src', key: 'main.py' } };
const unresolvedSince = (time: string): RunStatus => ({
  phase: 'Pending',
  conditions: [{ type: 'SourceResolved', status: 'False', reason: 'SourceNotFound', message: 'x', lastTransitionTime: time }],
});

describe('sourceDigest and snapshotMismatch', () => {
  it('hashes the UTF-8 bytes: sha256:<hex> and the byte size', () => {
    expect(sourceDigest(TEXT)).toEqual({ digest: DIGEST, size: 15 });
    expect(sourceDigest('é').size).toBe(2);
  });

  it('finds no difference for the same bytes, and says which digests differ otherwise', () => {
    expect(snapshotMismatch(TEXT, { digest: DIGEST, size: 15 })).toBeUndefined();
    expect(snapshotMismatch('print("other")\n', { digest: DIGEST, size: 15 })).toMatch(/not the snapshot sha256:[0-9a-f]{64} \(15 bytes\)/);
    expect(snapshotMismatch(TEXT, { digest: DIGEST, size: 16 })).toBeDefined();
  });
});

describe('needsSnapshot', () => {
  it.each([
    ['a new Run (no status)', run({ inline: TEXT }), true],
    ['a Pending Run of before snapshots (no status.source)', run({ inline: TEXT }, { phase: 'Pending', attempt: 2 }), true],
    ['a Run with its snapshot', run({ inline: TEXT }, { phase: 'Pending', source: { digest: DIGEST, size: 15 } }), false],
    ['a Running Run (decided: it keeps what it runs)', run({ inline: TEXT }, { phase: 'Running' }), false],
    ['a finished Run', run({ inline: TEXT }, { phase: 'Failed' }), false],
    ['a cancelled one (the scheduler ends it)', run({ inline: TEXT }, undefined, { cancelRequested: true }), false],
  ])('%s', (_name, subject, expected) => {
    expect(needsSnapshot(subject)).toBe(expected);
  });

  it('not a Run being deleted, nor one executed elsewhere', () => {
    const deleting = run({ inline: TEXT });
    deleting.metadata.deletionTimestamp = '2026-06-01T11:00:00Z';
    expect(needsSnapshot(deleting)).toBe(false);
    const local = run({ inline: TEXT }, undefined, {
      origin: {
        local: {
          runId: '20260601-110000-a1b2c3',
          lockDigest: DIGEST,
          result: {
            phase: 'Succeeded',
            reason: 'Succeeded',
            message: '',
            startTime: '2026-06-01T10:00:00Z',
            completionTime: '2026-06-01T10:01:00Z',
          },
        },
      },
    });
    expect(needsSnapshot(local)).toBe(false);
  });
});

describe('decideSource', () => {
  const decide = (subject: Run, read: SourceRead, nowMs = NOW_MS) => decideSource({ run: subject, read, nowMs, maxWaitMs: WAIT_MS });

  it('an inline source is hashed as it is: no ConfigMap', () => {
    expect(decide(run({ inline: TEXT }), { type: 'text', text: TEXT })).toEqual({
      action: 'snapshot',
      text: TEXT,
      source: { digest: DIGEST, size: 15 },
    });
  });

  it('a ConfigMap source is copied: the snapshot ConfigMap named by the digest', () => {
    expect(decide(run(fromConfigMap), { type: 'text', text: TEXT })).toEqual({
      action: 'snapshot',
      text: TEXT,
      source: { digest: DIGEST, size: 15, configMapName: `krt-src-${DIGEST.slice(7, 27)}` },
    });
  });

  it('a pinned digest (krt retry) that matches is snapshotted', () => {
    expect(decide(run({ ...fromConfigMap, digest: DIGEST }), { type: 'text', text: TEXT }).action).toBe('snapshot');
  });

  it.each([
    [
      'a missing ConfigMap',
      run(fromConfigMap),
      { type: 'notFound', detail: 'the ConfigMap does not exist' },
      'SourceNotFound',
      /ConfigMap src key main.py: the ConfigMap does not exist/,
    ],
    [
      'a ConfigMap the platform may not read',
      run(fromConfigMap),
      { type: 'forbidden', detail: '403' },
      'SourceForbidden',
      /not readable by the platform/,
    ],
    [
      'a source over the bound',
      run(fromConfigMap),
      { type: 'text', text: 'x'.repeat(BOUNDS.inlineSourceBytes + 1) },
      'SourceTooLarge',
      /over the source bound of 262144/,
    ],
    [
      'a source that is not the pinned one',
      run({ ...fromConfigMap, digest: `sha256:${'0'.repeat(64)}` }),
      { type: 'text', text: TEXT },
      'SourceDigestMismatch',
      /not the pinned spec.source.digest/,
    ],
    [
      'a conflicting snapshot ConfigMap',
      run(fromConfigMap),
      { type: 'conflict', detail: 'ConfigMap krt-src-x exists with other content' },
      'SourceSnapshotConflict',
      /other content/,
    ],
  ] as const)('%s keeps the Run Pending with its reason, polled', (_name, subject, read, reason, message) => {
    const decision = decide(subject, read);
    expect(decision).toMatchObject({ action: 'wait', reason, requeueAfterMs: SOURCE_POLL_MS });
    expect(decision.action === 'wait' ? decision.message : '').toMatch(message);
    expect(decision.action === 'wait' ? decision.message : '').toMatch(/fails if this lasts 300s/);
  });

  it('the wait counts from when SourceResolved became False, and the last poll comes when it runs out', () => {
    const decision = decide(run(fromConfigMap, unresolvedSince('2026-06-01T11:55:02Z')), { type: 'notFound', detail: 'gone' });
    expect(decision).toMatchObject({ action: 'wait', requeueAfterMs: 2000 });
  });

  it('fails with the same reason once the wait is over', () => {
    const decision = decide(run(fromConfigMap, unresolvedSince('2026-06-01T11:55:00Z')), { type: 'forbidden', detail: '403' });
    expect(decision).toMatchObject({ action: 'fail', reason: 'SourceForbidden' });
    expect(decision.action === 'fail' ? decision.message : '').toMatch(/still after waiting 300s/);
  });

  it('a source that became readable within the wait is snapshotted', () => {
    expect(decide(run(fromConfigMap, unresolvedSince('2026-06-01T11:59:00Z')), { type: 'text', text: TEXT }).action).toBe('snapshot');
  });
});

describe('decideSnapshotConfigMap', () => {
  const name = 'krt-src-x';
  const owned = (uid: string) => [{ apiVersion: 'kruntimes.io/v1alpha1', kind: 'Run', name: 'job', uid }];

  it.each([
    ['absent: create it', undefined, { action: 'create' }],
    [
      'the same bytes, owned by this Run: use it',
      { immutable: true, data: { source: TEXT }, ownerReferences: owned('run-uid') },
      { action: 'use' },
    ],
    [
      'the same bytes, of another Run: adopt it too',
      { immutable: true, data: { source: TEXT }, ownerReferences: owned('other') },
      { action: 'adopt' },
    ],
    ['other bytes (recreated by someone)', { immutable: true, data: { source: 'print(2)' } }, { action: 'conflict' }],
    ['mutable', { data: { source: TEXT } }, { action: 'conflict' }],
    ['another key', { immutable: true, data: { other: TEXT } }, { action: 'conflict' }],
    ['an extra key', { immutable: true, data: { source: TEXT, other: '' } }, { action: 'conflict' }],
    ['binary data too', { immutable: true, data: { source: TEXT }, binaryData: { b: 'AA==' } }, { action: 'conflict' }],
  ] as const)('%s', (_name, existing, expected) => {
    expect(decideSnapshotConfigMap(existing, name, TEXT, 'run-uid')).toMatchObject(expected);
  });
});

describe('snapshotConfigMap', () => {
  it('is immutable, owned by the Run, named and annotated by the digest, with the one key', () => {
    expect(snapshotConfigMap(run(fromConfigMap), { digest: DIGEST }, TEXT)).toMatchObject({
      metadata: {
        name: `krt-src-${DIGEST.slice(7, 27)}`,
        namespace: 'ns',
        annotations: { 'kruntimes.io/source-digest': DIGEST },
        ownerReferences: [{ apiVersion: 'kruntimes.io/v1alpha1', kind: 'Run', name: 'job', uid: 'run-uid' }],
      },
      immutable: true,
      data: { source: TEXT },
    });
  });
});
