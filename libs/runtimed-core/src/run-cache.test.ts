import type { Run, RunSpec, RunStatus } from '@kruntimes/api';
import { runtimedRunProjection, runtimedRunView } from './run-cache.ts';

const SELF = 'pod-self';
const READY = { type: 'Ready', status: 'True', reason: 'Running', message: 'serving', lastTransitionTime: '2026-01-01T00:00:05Z' } as const;
const SOURCE = {
  type: 'SourceResolved',
  status: 'True',
  reason: 'Resolved',
  message: 'ok',
  lastTransitionTime: '2026-01-01T00:00:01Z',
} as const;

function run(status: RunStatus | undefined, mode: RunSpec['mode'] = { task: { args: ['--x'] } }): Run {
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
      deletionTimestamp: '2026-01-01T00:01:00Z',
      finalizers: ['kruntimes.io/registration-cleanup'],
      labels: { team: 'a' },
      annotations: { big: 'x'.repeat(100) },
    },
    spec: {
      runtime: 'python',
      source: { inline: 'print(1)\n'.repeat(100) },
      mode,
      env: [{ name: 'A', value: 'b' }],
      retryPolicy: { maxAttempts: 3, retrySafe: true },
      cancelRequested: true,
      timeout: '1h',
      artifacts: { store: 's', outputs: [{ id: 'o.csv', maxBytes: 1024, mediaType: 'text/csv' }] },
    },
    ...(status === undefined ? {} : { status }),
  };
}

const IDENTITY = {
  name: 'r',
  namespace: 'ns',
  uid: 'u',
  resourceVersion: '7',
  generation: 1,
  creationTimestamp: '2026-01-01T00:00:00Z',
  deletionTimestamp: '2026-01-01T00:01:00Z',
  finalizers: ['kruntimes.io/registration-cleanup'],
};
const TASK_SPEC = { runtime: 'python', source: {}, mode: { task: {} } };
const OTHER = { attempt: 2, assignedPod: 'python-1', assignedPodUID: 'pod-other' };

describe('runtimedRunView', () => {
  it.each<[string, Run]>([
    ['a task Run assigned to this Pod', run({ phase: 'Running', attempt: 1, assignedPod: 'python-0', assignedPodUID: SELF, message: 'm' })],
    [
      'a function Run assigned to this Pod, every condition and output',
      run(
        { phase: 'Ready', attempt: 1, assignedPodUID: SELF, conditions: [SOURCE, READY], outputs: { a: 'b' } },
        { function: { handler: 'h' } },
      ),
    ],
  ])('keeps %s whole (executed, registered and written from the cache)', (_name, input) => {
    expect(runtimedRunView(input, SELF)).toBe(input);
  });

  it.each<[string, Run, { spec: object; status?: RunStatus }]>([
    [
      'a task Run of another Pod: the epoch and the Ready condition; its args, source, reason, message, outputs and other conditions dropped',
      run({
        phase: 'Running',
        ...OTHER,
        reason: 'Running',
        message: 'm',
        outputs: { a: 'b' },
        startTime: '2026-01-01T00:00:04Z',
        source: { digest: 'sha256:0', size: 1 },
        conditions: [SOURCE, READY],
      }),
      { spec: TASK_SPEC, status: { phase: 'Running', ...OTHER, conditions: [READY] } },
    ],
    [
      'a function Run of another Pod keeps its mode (routing reads invocationTimeoutSeconds)',
      run({ phase: 'Ready', ...OTHER, conditions: [READY] }, { function: { handler: 'h', invocationTimeoutSeconds: 9 } }),
      {
        spec: { ...TASK_SPEC, mode: { function: { handler: 'h', invocationTimeoutSeconds: 9 } } },
        status: { phase: 'Ready', ...OTHER, conditions: [READY] },
      },
    ],
    [
      'a Pending Run without an assignment or conditions',
      run({ phase: 'Pending', attempt: 1, reason: 'NoCapacity', message: 'full' }),
      { spec: TASK_SPEC, status: { phase: 'Pending', attempt: 1 } },
    ],
    ['a Run without a status has none', run(undefined), { spec: TASK_SPEC }],
  ])('%s', (_name, input, expected) => {
    expect(runtimedRunView(input, SELF)).toStrictEqual({
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata: IDENTITY,
      ...expected,
    });
  });

  it('is the projection runtimed watches with, for its own Pod', () => {
    const projection = runtimedRunProjection(SELF);
    const mine = run({ phase: 'Scheduled', attempt: 1, assignedPodUID: SELF });
    const keep = projection.keep;
    expect(projection.name).toBe('runtimed');
    expect(keep(mine)).toBe(mine);
    expect(keep(run({ phase: 'Scheduled', ...OTHER })).spec).toStrictEqual(TASK_SPEC);
  });
});
