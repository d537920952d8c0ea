import type { Run } from '@kruntimes/api';
import { decideExisting, syncedRun, syncedRunName } from './sync.ts';
import type { LocalResult } from './sync.ts';

const RUN_ID = '20261204-100000-a1b2c3';
const result = (extra: Partial<LocalResult> = {}, spec: Partial<Run['spec']> = {}): LocalResult => ({
  runId: RUN_ID,
  lockDigest: `sha256:${'a'.repeat(64)}`,
  run: {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name: 'report', uid: 'local-uid' },
    spec: { runtime: 'python', source: { inline: 'x' }, mode: { task: {} }, ...spec },
  },
  status: {
    phase: 'Succeeded',
    reason: 'Succeeded',
    message: 'completed',
    exitCode: 0,
    outputs: { a: '1' },
    startTime: '2026-12-04T10:00:00Z',
    completionTime: '2026-12-04T10:00:01Z',
  },
  ...extra,
});
const artifacts = { store: 's', outputs: [{ id: 'report.csv', maxBytes: 10, mediaType: 'text/csv' }] };

describe('syncedRunName', () => {
  it.each([
    ['report', `report-${RUN_ID}`],
    ['a'.repeat(253), `${'a'.repeat(253 - RUN_ID.length - 1)}-${RUN_ID}`],
    [`${'a'.repeat(229)}.b`, `${'a'.repeat(229)}-${RUN_ID}`],
  ])('%s', (name, expected) => {
    const synced = syncedRunName(name, RUN_ID);
    expect(synced).toBe(expected);
    expect(synced.length).toBeLessThanOrEqual(253);
  });
});

describe('syncedRun', () => {
  it('is the local spec with spec.origin (run ID, lock digest, result), labelled, without status or UID', () => {
    const run = syncedRun(result(), { withoutArtifacts: false });
    expect(run.metadata).toEqual({ name: `report-${RUN_ID}`, labels: { 'kruntimes.io/origin': 'local' } });
    expect(run.status).toBeUndefined();
    expect(run.spec.origin).toEqual({
      local: {
        runId: RUN_ID,
        lockDigest: `sha256:${'a'.repeat(64)}`,
        result: {
          phase: 'Succeeded',
          reason: 'Succeeded',
          message: 'completed',
          exitCode: 0,
          outputs: { a: '1' },
          startTime: '2026-12-04T10:00:00Z',
          completionTime: '2026-12-04T10:00:01Z',
        },
      },
    });
  });

  it.each<[string, LocalResult, boolean, RegExp]>([
    [
      'an interrupted run',
      result({ status: { phase: 'Interrupted', reason: 'OwnerLost' } }),
      false,
      /ended Interrupted: only a Succeeded, Failed or Timeout result is synced/,
    ],
    ['a cancelled run', result({ status: { phase: 'Cancelled' } }), false, /ended Cancelled/],
    ['a run with artifacts, without --without-artifacts', result({}, { artifacts }), false, /--without-artifacts/],
  ])('refuses %s', (_what, local, withoutArtifacts, message) => {
    expect(() => syncedRun(local, { withoutArtifacts })).toThrow(message);
  });

  it('--without-artifacts: the synced Run declares and records none', () => {
    const run = syncedRun(
      result(
        {
          status: {
            ...result().status,
            artifacts: [{ id: 'report.csv', digest: `sha256:${'b'.repeat(64)}`, size: 1, mediaType: 'text/csv' }],
          },
        },
        { artifacts },
      ),
      { withoutArtifacts: true },
    );
    expect(run.spec.artifacts).toBeUndefined();
    expect(run.spec.origin?.local.result.artifacts).toBeUndefined();
  });
});

describe('decideExisting (a retried sync meets AlreadyExists)', () => {
  const wanted = syncedRun(result(), { withoutArtifacts: false });
  it.each<[string, Run, boolean]>([
    ['the same local run synced before', structuredClone(wanted), true],
    ['a Run executed by the platform', { ...wanted, spec: { runtime: 'python', source: { inline: 'x' }, mode: { task: {} } } }, false],
    ['another local run', syncedRun(result({ runId: '20261204-100000-ffffff' }), { withoutArtifacts: false }), false],
    [
      'the same run ID with another result',
      syncedRun(result({ status: { ...result().status, outputs: { a: '2' } } }), { withoutArtifacts: false }),
      false,
    ],
  ])('%s', (_what, existing, same) => {
    expect(decideExisting(existing, wanted).same).toBe(same);
  });
});
