import { RUNS, SCHEDULER_RUN_PROJECTION, schedulerRunView } from './scheduler-caches.ts';
import type { Run } from '@kruntimes/api';

const STATUS: NonNullable<Run['status']> = {
  phase: 'Pending',
  attempt: 2,
  reason: 'NoCapacity',
  message: 'every Pod is full',
  notBefore: '2026-01-01T00:00:10Z',
  source: { digest: `sha256:${'a'.repeat(64)}`, size: 9 },
  conditions: [
    { type: 'Ready', status: 'False', reason: 'NoCapacity', message: 'every Pod is full', lastTransitionTime: '2026-01-01T00:00:00Z' },
  ],
};

function run(spec: Partial<Run['spec']> = {}, status: NonNullable<Run['status']> | 'none' = STATUS): Run {
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
      labels: { team: 'a' },
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' },
    },
    spec: {
      runtime: 'python',
      source: { inline: 'print(1)\n'.repeat(200) },
      mode: { task: { args: ['--x'] } },
      env: [{ name: 'A', value: 'b' }],
      timeout: '5m',
      ttlSecondsAfterFinished: 60,
      creator: { username: 'alice', groups: ['dev'] },
      ...spec,
    },
    ...(status === 'none' ? {} : { status }),
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

describe('schedulerRunView', () => {
  it.each<[string, Run, Run]>([
    [
      'a queued task: the whole status, the spec a transition reads and the creator; no source text, env, args, labels or annotations',
      run(),
      {
        apiVersion: 'kruntimes.io/v1alpha1',
        kind: 'Run',
        metadata: IDENTITY,
        spec: { runtime: 'python', source: {}, mode: { task: {} }, creator: { username: 'alice', groups: ['dev'] } },
        status: STATUS,
      } as unknown as Run,
    ],
    [
      'a cancelled function with a retry policy',
      run({ mode: { function: { handler: 'h' } }, cancelRequested: true, retryPolicy: { maxAttempts: 2 } }, 'none'),
      {
        apiVersion: 'kruntimes.io/v1alpha1',
        kind: 'Run',
        metadata: IDENTITY,
        spec: {
          runtime: 'python',
          source: {},
          mode: { function: { handler: 'h' } },
          cancelRequested: true,
          retryPolicy: { maxAttempts: 2 },
          creator: { username: 'alice', groups: ['dev'] },
        },
      } as unknown as Run,
    ],
    [
      'a Run placed or finished: only phase and assignment of its status (what capacity and routing read)',
      run({}, { ...STATUS, phase: 'Succeeded', assignedPod: 'p', assignedPodUID: 'pu', outputs: { a: '1' } }),
      {
        apiVersion: 'kruntimes.io/v1alpha1',
        kind: 'Run',
        metadata: IDENTITY,
        spec: { runtime: 'python', source: {}, mode: { task: {} }, creator: { username: 'alice', groups: ['dev'] } },
        status: { phase: 'Succeeded', assignedPodUID: 'pu', assignedPod: 'p' },
      } as unknown as Run,
    ],
  ])('%s', (_name, input, expected) => {
    expect(schedulerRunView(input)).toStrictEqual(expected);
  });

  it('is the Run watch projection', () => {
    expect(RUNS.projection).toBe(SCHEDULER_RUN_PROJECTION);
    expect(SCHEDULER_RUN_PROJECTION.keep).toBe(schedulerRunView);
  });
});
