import type { Run, RunStatus } from '@kruntimes/api';
import { RECOVERY_RUN_PROJECTION, RUNS, recoveryRunView } from './recovery-caches.ts';

const READY = {
  type: 'Ready',
  status: 'True',
  reason: 'Running',
  message: 'executing',
  lastTransitionTime: '2026-01-01T00:00:05Z',
} as const;
const SOURCE = {
  type: 'SourceResolved',
  status: 'True',
  reason: 'Resolved',
  message: 'ok',
  lastTransitionTime: '2026-01-01T00:00:01Z',
} as const;
const RESUME = {
  checkpoint: { attempt: 1, digest: 'sha256:c', size: 10 },
  responseId: 'r1',
  runInput: 'in',
  input: '{"answer":42}',
  attempt: 2,
};

function run(status: RunStatus, mode: Run['spec']['mode'] = { task: { args: ['--x'] } }): Run {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: {
      name: 'r',
      namespace: 'ns',
      uid: 'u',
      resourceVersion: '7',
      generation: 1,
      creationTimestamp: '2026-01-01T00:00:00Z',
      finalizers: ['kruntimes.io/registration-cleanup'],
      annotations: { big: 'x'.repeat(100) },
    },
    spec: {
      runtime: 'python',
      source: { inline: 'print(1)\n'.repeat(100) },
      mode,
      env: [{ name: 'A', value: 'b' }],
      retryPolicy: { maxAttempts: 3, retrySafe: true },
      cancelRequested: false,
      timeout: '1h',
    },
    status,
  } as unknown as Run;
}

const IDENTITY = {
  name: 'r',
  namespace: 'ns',
  uid: 'u',
  resourceVersion: '7',
  generation: 1,
  creationTimestamp: '2026-01-01T00:00:00Z',
  finalizers: ['kruntimes.io/registration-cleanup'],
};
const SPEC = {
  runtime: 'python',
  source: {},
  mode: { task: {} },
  retryPolicy: { maxAttempts: 3, retrySafe: true },
  cancelRequested: false,
};
const OWNED = { attempt: 2, assignedPod: 'p', assignedPodUID: 'pu', startTime: '2026-01-01T00:00:04Z', plannedMoves: 1 };

describe('recoveryRunView', () => {
  it.each<[string, Run, { spec: object; status: RunStatus }]>([
    [
      'a running continuation: the epoch, the Ready condition and resume; no other condition, message or outputs',
      run({ phase: 'Running', ...OWNED, conditions: [SOURCE, READY], message: 'm', outputs: { a: 'b' }, resume: RESUME }),
      { spec: SPEC, status: { phase: 'Running', ...OWNED, conditions: [READY], resume: RESUME } },
    ],
    [
      'a finished Run: resume no longer read (no retry budget left to weigh)',
      run({
        phase: 'Succeeded',
        ...OWNED,
        conditions: [READY],
        resume: RESUME,
        exitCode: 0,
        endpoint: { protocol: 'HTTPS', url: 'https://x', caBundle: 'Y2E=' },
      }),
      { spec: SPEC, status: { phase: 'Succeeded', ...OWNED, conditions: [READY] } },
    ],
    [
      'a function keeps its handler; a Run without conditions has none',
      run({ phase: 'Pending' }, { function: { handler: 'h' } }),
      { spec: { ...SPEC, mode: { function: { handler: 'h' } } }, status: { phase: 'Pending' } },
    ],
  ])('%s', (_name, input, expected) => {
    expect(recoveryRunView(input)).toStrictEqual({ apiVersion: 'kruntimes.io/v1alpha1', kind: 'Run', metadata: IDENTITY, ...expected });
  });

  it('is the Run watch projection', () => {
    expect(RUNS.projection).toBe(RECOVERY_RUN_PROJECTION);
    expect(RECOVERY_RUN_PROJECTION.keep).toBe(recoveryRunView);
  });
});
