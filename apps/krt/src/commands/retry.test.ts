import type { Run, RunPhase } from '@kruntimes/api';
import type { InterruptReason } from '@kruntimes/run-state';
import { decideRetryConfirmation, interruptedHowFar, retryOf, retryRisk } from './retry.ts';

function finished(overrides: Partial<Run['spec']> = {}, name = 'job'): Run {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name, uid: 'uid-1', namespace: 'ns', resourceVersion: '7', labels: { a: 'b' } },
    spec: {
      runtime: 'sh',
      source: { inline: 'echo' },
      mode: { task: { args: ['x'] } },
      env: [{ name: 'K', value: 'V' }],
      timeout: '1m',
      retryPolicy: { maxAttempts: 2 },
      ...overrides,
    },
    status: { phase: 'Failed', attempt: 2 },
  };
}

describe('retryOf', () => {
  it('is a new Run with the same spec, parentRunRef to the original, and a generated name', () => {
    const original = finished();
    expect(retryOf(original)).toEqual({
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata: { generateName: 'job-retry-' },
      spec: { ...original.spec, parentRunRef: { name: 'job', uid: 'uid-1' } },
    });
  });

  it('does not copy cancelRequested, and points at the Run retried, not its parent', () => {
    const retried = retryOf(finished({ cancelRequested: true, parentRunRef: { name: 'first', uid: 'uid-0' } }, 'job-retry-x7k2p'));
    expect(retried.spec.cancelRequested).toBeUndefined();
    expect(retried.spec.parentRunRef).toEqual({ name: 'job-retry-x7k2p', uid: 'uid-1' });
    expect(retried.metadata.generateName).toBe('job-retry-');
  });

  const DIGEST = `sha256:${'ab'.repeat(32)}`;
  const fromConfigMap = { source: { configMapKeyRef: { name: 'src', key: 'main.sh' } } };
  const snapshotted = (overrides: Partial<Run['spec']> = {}): Run => ({
    ...finished(overrides),
    status: { phase: 'Failed', attempt: 1, source: { digest: DIGEST, size: 4, configMapName: 'krt-src-abababababababababab' } },
  });

  it("pins the parent's source snapshot: same digest, the user's reference kept", () => {
    expect(retryOf(snapshotted(fromConfigMap)).spec.source).toEqual({ configMapKeyRef: { name: 'src', key: 'main.sh' }, digest: DIGEST });
    expect(retryOf(snapshotted()).spec.source).toEqual({ inline: 'echo', digest: DIGEST });
  });

  it('with refreshSource reads spec.source again: no pin, not even one the parent carried', () => {
    const parent = snapshotted({ source: { configMapKeyRef: { name: 'src', key: 'main.sh' }, digest: DIGEST } });
    expect(retryOf(parent, { refreshSource: true }).spec.source).toEqual({ configMapKeyRef: { name: 'src', key: 'main.sh' } });
  });

  it('a parent of before snapshots has nothing to pin', () => {
    expect(retryOf(finished(fromConfigMap)).spec.source).toEqual(fromConfigMap.source);
  });

  it('does not share objects with the original', () => {
    const original = finished();
    const retried = retryOf(original);
    retried.spec.env?.push({ name: 'X', value: 'Y' });
    expect(original.spec.env).toHaveLength(1);
  });
});

describe('decideRetryConfirmation', () => {
  const task = (
    phase: RunPhase,
    retrySafe: boolean,
    status: Partial<NonNullable<Run['status']>> = {},
    mode: Run['spec']['mode'] = { task: {} },
  ): Run => ({
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name: 'job', uid: 'u', namespace: 'ns' },
    spec: { runtime: 'sh', source: { inline: 'echo' }, mode, ...(retrySafe ? { retryPolicy: { retrySafe: true, maxAttempts: 3 } } : {}) },
    status: { phase, attempt: 1, ...status },
  });
  const fn = (phase: RunPhase): Run => task(phase, false, {}, { function: { handler: 'h' } });
  const neverRan = (): Run => {
    const run = task('Cancelled', false);
    delete run.status?.attempt;
    return run;
  };
  const interrupted = { reason: 'OwnerLost', message: 'the owner Pod p-1 was lost' };

  const cases: [string, Run, { yes: boolean; terminal: boolean }, 'retry' | 'retryWarned' | 'ask' | 'refuse'][] = [
    [
      'a retrySafe task that Failed: no question',
      task('Failed', true, { reason: 'NonZeroExit', exitCode: 3 }),
      { yes: false, terminal: false },
      'retry',
    ],
    ['a retrySafe task that timed out: no question', task('Timeout', true), { yes: false, terminal: true }, 'retry'],
    ['a retrySafe task that succeeded: no question', task('Succeeded', true), { yes: false, terminal: false }, 'retry'],
    ['a function Run: no question', fn('Failed'), { yes: false, terminal: false }, 'retry'],
    ['a function Run that ended Interrupted: no question', fn('Interrupted'), { yes: false, terminal: false }, 'retry'],
    ['a task that never ran an attempt: no question', neverRan(), { yes: false, terminal: false }, 'retry'],
    ['a retrySafe task Interrupted, on a terminal: ask', task('Interrupted', true, interrupted), { yes: false, terminal: true }, 'ask'],
    [
      'a retrySafe task Interrupted, no terminal: refused',
      task('Interrupted', true, interrupted),
      { yes: false, terminal: false },
      'refuse',
    ],
    [
      'a retrySafe task Interrupted, --yes: retried, warned',
      task('Interrupted', true, interrupted),
      { yes: true, terminal: false },
      'retryWarned',
    ],
    ['a task not retrySafe that Failed, on a terminal: ask', task('Failed', false), { yes: false, terminal: true }, 'ask'],
    ['a task not retrySafe that Succeeded, no terminal: refused', task('Succeeded', false), { yes: false, terminal: false }, 'refuse'],
    [
      'a task not retrySafe that was Cancelled, --yes on a terminal: no question',
      task('Cancelled', false),
      { yes: true, terminal: true },
      'retryWarned',
    ],
    [
      'a task not retrySafe Interrupted, no terminal: refused',
      task('Interrupted', false, interrupted),
      { yes: false, terminal: false },
      'refuse',
    ],
  ];
  it.each(cases)('%s', (_name, run, flags, kind) => {
    expect(decideRetryConfirmation({ run, ...flags }).kind).toBe(kind);
  });

  it('says which attempt ended how, whether it may have run partly or wholly, and that side effects may repeat', () => {
    expect(retryRisk(task('Interrupted', false, { attempt: 1, ...interrupted }))).toBe(
      'run/job: it is a task that is not retrySafe (spec.retryPolicy.retrySafe). Its attempt 1 ended Interrupted (OwnerLost: the owner Pod p-1 was lost): ' +
        'its owner was lost, so it may have run partly or wholly. ' +
        'A retry runs the program again from the start, so its external side effects (writes, calls, messages sent) may repeat.',
    );
    expect(retryRisk(task('Interrupted', true, { attempt: 3, reason: 'OwnerLost' }))).toMatch(
      /^run\/job: it ended Interrupted\. Its attempt 3 ended Interrupted \(OwnerLost\): its owner was lost, so it may have run partly or wholly; the 2 attempts before it may have run as well\./,
    );
    expect(retryRisk(task('Failed', false, { reason: 'NonZeroExit', message: 'exit 3', exitCode: 3 }))).toMatch(
      /Its attempt 1 ended Failed \(NonZeroExit: exit 3, exit code 3\): it may have run partly\./,
    );
    expect(retryRisk(task('Succeeded', false, { attempt: 2 }))).toMatch(
      /Its attempt 2 ended Succeeded: it ran wholly; the attempt before it may have run as well\./,
    );
    expect(retryRisk(task('Failed', true))).toBeUndefined();
  });

  // Typed over every Interrupted reason: a new one does not type-check here without its wording.
  const wordings: Record<InterruptReason, string> = {
    OwnerLost: 'its owner was lost, so it may have run partly or wholly',
    RuntimeServerLost: 'its Runtime Server died during it (killed or crashed), so it may have run partly or wholly',
    DrainWindowExceeded: 'its Pod was stopping and it still ran when the drain window ended, so it may have run partly or wholly',
    CancelUnconfirmed: 'its cancel could not be confirmed (its owner was lost), so it may have run partly or wholly',
  };
  it.each([
    ...Object.entries(wordings),
    ['SomeNewerReason', 'the platform cut it short, so it may have run partly or wholly'],
    [undefined, 'the platform cut it short, so it may have run partly or wholly'],
  ])('an attempt Interrupted with reason %s: %s', (reason, expected) => {
    expect(interruptedHowFar(reason)).toBe(expected);
    expect(retryRisk(task('Interrupted', false, reason === undefined ? {} : { reason }))).toContain(`: ${expected}. A retry runs`);
  });
});
