import type { Run, RunSpec } from '@kruntimes/api';
import { localStatus, outcomeEvent } from './local-outcome.ts';
import type { ArtifactCheck, LocalExit } from './local-outcome.ts';

const spec: RunSpec = { runtime: 'python', source: { inline: 'x' }, mode: { task: {} }, timeout: '5s' };
const retrySafe: RunSpec = { ...spec, retryPolicy: { retrySafe: true, maxAttempts: 3 } };
const declared: RunSpec = { ...spec, artifacts: { store: 's', outputs: [{ id: 'report.csv', maxBytes: 100, mediaType: 'text/csv' }] } };
const record = { id: 'report.csv', digest: `sha256:${'c'.repeat(64)}`, size: 5, mediaType: 'text/csv' };
const none: ArtifactCheck = { type: 'none' };

describe('outcomeEvent (what runtimed writes for the same ending)', () => {
  it.each<[string, RunSpec, LocalExit, ArtifactCheck, object]>([
    ['exit 0', spec, { type: 'completed', exitCode: 0, outputs: { a: '1' } }, none, { type: 'Succeeded', outputs: { a: '1' } }],
    [
      'exit 0 with verified artifacts',
      declared,
      { type: 'completed', exitCode: 0, outputs: {} },
      { type: 'verified', records: [record] },
      { type: 'Succeeded', artifacts: [record] },
    ],
    [
      'exit 0, an artifact missing',
      declared,
      { type: 'completed', exitCode: 0, outputs: {} },
      { type: 'failed', reason: 'ArtifactMissing', message: 'm' },
      { type: 'Failed', reason: 'ArtifactMissing', exitCode: 0 },
    ],
    [
      'a non-zero exit',
      spec,
      { type: 'completed', exitCode: 3, outputs: {} },
      none,
      { type: 'Failed', reason: 'NonZeroExit', message: 'attempt 1 of 1: exited with code 3', exitCode: 3 },
    ],
    [
      'a non-zero exit of a retrySafe task',
      retrySafe,
      { type: 'completed', exitCode: 3, outputs: {} },
      none,
      { message: 'attempt 1 of 3 (krt run --local runs one attempt): exited with code 3' },
    ],
    [
      'a timeout',
      spec,
      { type: 'timedOut' },
      none,
      { type: 'TimedOut', reason: 'Timeout', message: 'ran longer than spec.timeout (5s) since startTime' },
    ],
    [
      'a start failure',
      spec,
      { type: 'startFailed', message: 'no python' },
      none,
      { type: 'Failed', reason: 'Failed', message: 'attempt 1 of 1: could not start: no python' },
    ],
    ['Ctrl-C', spec, { type: 'cancelled', exitCode: 143 }, none, { type: 'Cancelled', exitCode: 143 }],
    [
      'a lost execution of a task that is not retrySafe',
      spec,
      { type: 'lost', message: 'gone' },
      none,
      { type: 'Interrupted', reason: 'OwnerLost' },
    ],
    ['a lost execution of a retrySafe task', retrySafe, { type: 'lost', message: 'gone' }, none, { type: 'Failed', reason: 'Failed' }],
    [
      'an execution lost with its Runtime Server, of a task that is not retrySafe',
      spec,
      { type: 'lost', message: 'gone', reason: 'RuntimeServerLost' },
      none,
      { type: 'Interrupted', reason: 'RuntimeServerLost', message: 'not retried: the task is not retrySafe: gone' },
    ],
    [
      'an execution lost with its Runtime Server, of a retrySafe task (the cluster would retry it)',
      retrySafe,
      { type: 'lost', message: 'gone', reason: 'RuntimeServerLost' },
      none,
      { type: 'Failed', reason: 'Failed' },
    ],
  ])('%s', (_what, runSpec, exit, check, expected) => {
    expect(outcomeEvent(runSpec, exit, check)).toMatchObject(expected);
  });
});

describe('localStatus (the Run state machine’s answer, without the cluster’s fields)', () => {
  const run = (runSpec: RunSpec): Pick<Run, 'metadata' | 'spec'> => ({ metadata: { name: 'r', uid: 'u' }, spec: runSpec });
  const start = '2026-12-04T10:00:00Z';
  const end = '2026-12-04T10:00:05Z';

  it('Succeeded with outputs, exit code 0, times, the Ready condition; no Pod', () => {
    const status = localStatus(run(spec), { type: 'Succeeded', outputs: { a: '1' } }, start, end);
    expect(status).toMatchObject({
      phase: 'Succeeded',
      reason: 'Succeeded',
      message: 'completed',
      exitCode: 0,
      outputs: { a: '1' },
      startTime: start,
      completionTime: end,
      attempt: 1,
      mode: 'task',
    });
    expect(status.conditions?.[0]).toMatchObject({ type: 'Ready', status: 'False', reason: 'Succeeded' });
    expect(Object.keys(status)).not.toContain('assignedPod');
  });

  it('Cancelled by Ctrl-C', () => {
    expect(localStatus(run(spec), { type: 'Cancelled', message: 'stopped' }, start, end)).toMatchObject({
      phase: 'Cancelled',
      reason: 'Cancelled',
    });
  });

  it('outputs over the bounds fail the run with the state machine’s reason, as a refused write would', () => {
    const status = localStatus(run(spec), { type: 'Succeeded', outputs: { 'bad key': 'x' } }, start, end);
    expect(status).toMatchObject({ phase: 'Failed', reason: 'Failed', exitCode: 0 });
    expect(status.message).toMatch(/^the result was refused: Succeeded refused/);
  });

  it('artifacts against the declaration', () => {
    expect(localStatus(run(declared), { type: 'Succeeded', artifacts: [record] }, start, end)).toMatchObject({
      phase: 'Succeeded',
      artifacts: [record],
    });
    expect(localStatus(run(spec), { type: 'Succeeded', artifacts: [record] }, start, end)).toMatchObject({ phase: 'Failed' });
  });
});
