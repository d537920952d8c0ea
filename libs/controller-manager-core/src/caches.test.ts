import type { Run, RunStatus } from '@kruntimes/api';
import { MANAGER_RUN_PROJECTION, demandClasses, managerRunView } from './caches.ts';

const READY = { type: 'Ready', status: 'False', reason: 'Completed', message: 'done', lastTransitionTime: '2026-01-01T00:00:05Z' } as const;
const CHECKPOINT = { attempt: 1, digest: 'sha256:c', size: 10 };
const WAITING = { schema: '{"type":"object"}', checkpoint: CHECKPOINT, since: '2026-01-01T00:00:03Z' };
const RESUME = { checkpoint: CHECKPOINT, responseId: 'r1', runInput: 'in', input: '{"answer":42}', attempt: 2 };

function run(status: RunStatus): Run {
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
      labels: { team: 'a' },
      annotations: { big: 'x'.repeat(100) },
    },
    spec: {
      runtime: 'python',
      source: { inline: 'print(1)\n'.repeat(100) },
      mode: { task: { args: ['--x'] } },
      env: [{ name: 'A', value: 'b' }],
      retryPolicy: { maxAttempts: 3 },
      cancelRequested: false,
      timeout: '1h',
      ttlSecondsAfterFinished: 60,
      creator: { username: 'alice' },
    },
    status,
  } as unknown as Run;
}

const IDENTITY = { name: 'r', namespace: 'ns', uid: 'u', resourceVersion: '7', generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' };
const SPEC = { runtime: 'python', source: {}, mode: { task: {} }, cancelRequested: false, timeout: '1h', ttlSecondsAfterFinished: 60 };

describe('managerRunView', () => {
  it.each<[string, RunStatus, RunStatus]>([
    [
      'a Pending Run waiting for a slot: phase and reason; not the message or conditions',
      { phase: 'Pending', reason: 'NoCapacity', message: 'full', conditions: [READY], attempt: 1 },
      { phase: 'Pending', reason: 'NoCapacity', attempt: 1 },
    ],
    [
      'a Run waiting for input: the checkpoint it still needs, the start of its timeout',
      { phase: 'WaitingInput', attempt: 1, startTime: '2026-01-01T00:00:01Z', waitingInput: WAITING, message: 'waiting' },
      { phase: 'WaitingInput', attempt: 1, startTime: '2026-01-01T00:00:01Z', waitingInput: WAITING },
    ],
    [
      'a finished Run: what TTL, history and artifact retention read; no outputs, endpoint, resume or artifacts',
      {
        phase: 'Succeeded',
        attempt: 2,
        assignedPod: 'p',
        assignedPodUID: 'pu',
        startTime: '2026-01-01T00:00:01Z',
        completionTime: '2026-01-01T00:00:09Z',
        conditions: [READY],
        outputs: { result: 'y'.repeat(100) },
        exitCode: 0,
        resume: RESUME,
        artifacts: [{ id: 'a', digest: 'sha256:a', size: 1, mediaType: 'text/plain' }],
        endpoint: { protocol: 'HTTPS', url: 'https://x', caBundle: 'Y2E=' },
        source: { digest: 'sha256:s', size: 9 },
      },
      { phase: 'Succeeded', attempt: 2, assignedPodUID: 'pu', startTime: '2026-01-01T00:00:01Z', completionTime: '2026-01-01T00:00:09Z' },
    ],
  ])('%s', (_name, status, expected) => {
    expect(managerRunView(run(status))).toStrictEqual({
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata: IDENTITY,
      spec: SPEC,
      status: expected,
    });
  });

  it('a function keeps its handler; a Run without status has none', () => {
    const fn = run({});
    fn.spec.mode = { function: { handler: 'h' } };
    delete fn.status;
    expect(managerRunView(fn)).toStrictEqual({
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata: IDENTITY,
      spec: { ...SPEC, mode: { function: { handler: 'h' } } },
    });
  });

  it('is the projection of the shared Run cache', () => {
    expect(MANAGER_RUN_PROJECTION.keep).toBe(managerRunView);
  });
});

describe('demandClasses', () => {
  const withFinalizer = (status: RunStatus): Run => {
    const r = run(status);
    r.metadata.finalizers = ['kruntimes.io/registration-cleanup'];
    return r;
  };
  const deleting = (status: RunStatus): Run => {
    const r = run(status);
    // Custom objects are parsed JSON: the timestamp is a string, whatever V1ObjectMeta says.
    (r.metadata as { deletionTimestamp?: string }).deletionTimestamp = '2026-01-01T00:00:09Z';
    return r;
  };
  it.each<[string, Run, string[]]>([
    ['Pending, no reason yet: waits for a slot', run({ phase: 'Pending' }), ['pending']],
    ['Pending for want of capacity: waits for a slot', run({ phase: 'Pending', reason: 'WaitingForCapacity' }), ['pending']],
    ['Pending on a suspended Runtime: no slot would help', run({ phase: 'Pending', reason: 'RuntimeSuspended' }), []],
    ['Pending but being deleted: asks for nothing', deleting({ phase: 'Pending' }), []],
    ['scheduled to a Pod: holds a slot of it', run({ phase: 'Scheduled', assignedPodUID: 'p1' }), ['held', 'holdsPod']],
    ['running: holds a slot of its Pod', run({ phase: 'Running', assignedPodUID: 'p1', attempt: 1 }), ['held', 'holdsPod']],
    ['finished: holds nothing', run({ phase: 'Succeeded', assignedPodUID: 'p1' }), []],
    [
      'finished, its registration not yet cleaned up: still holds',
      withFinalizer({ phase: 'Succeeded', assignedPodUID: 'p1' }),
      ['held', 'holdsPod'],
    ],
  ])('%s', (_name, input, expected) => {
    expect(demandClasses(input)).toEqual(expected);
  });
});
