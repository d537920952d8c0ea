import { runFacts, runKeyOfEvent } from './run-facts.ts';

describe('runKeyOfEvent', () => {
  const event = (over: Record<string, unknown> = {}, involved: Record<string, unknown> = {}) => ({
    reason: 'OwnerUnreachable',
    metadata: { namespace: 'ns-of-event' },
    involvedObject: { apiVersion: 'kruntimes.io/v1alpha1', kind: 'Run', name: 'fn', namespace: 'ns', ...involved },
    ...over,
  });
  it.each([
    ['an OwnerUnreachable Event on a Run', event(), 'ns/fn'],
    ["the Event's namespace when the object names none", event({}, { namespace: undefined }), 'ns-of-event/fn'],
    ['another reason', event({ reason: 'Scheduled' }), undefined],
    ['another kind', event({}, { kind: 'Pod' }), undefined],
    ['a Run of another API group', event({}, { apiVersion: 'example.com/v1' }), undefined],
    ['no name', event({}, { name: undefined }), undefined],
  ])('%s', (_name, input, expected) => {
    expect(runKeyOfEvent(input as Parameters<typeof runKeyOfEvent>[0])).toBe(expected);
  });
});

describe('runFacts', () => {
  it('reads phase, mode, cancel, deletion, finalizer, Ready reason and epoch', () => {
    expect(
      runFacts({
        apiVersion: 'kruntimes.io/v1alpha1',
        kind: 'Run',
        metadata: { name: 'fn', deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['kruntimes.io/registration-cleanup'] },
        spec: { runtime: 'rt', source: { inline: 'x' }, mode: { function: { handler: 'main:handle' } }, cancelRequested: true },
        status: {
          phase: 'Ready',
          attempt: 2,
          assignedPod: 'p',
          assignedPodUID: 'u',
          conditions: [{ type: 'Ready', status: 'False', reason: 'Recovering', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }],
        },
      }),
    ).toEqual({
      phase: 'Ready',
      mode: 'function',
      cancelRequested: true,
      retryPolicy: undefined,
      retryBudgetStart: 1,
      deleting: true,
      cleanupFinalizer: true,
      readyReason: 'Recovering',
      epoch: { attempt: 2, pod: 'p', podUID: 'u' },
    });
  });

  it('a Run without status is Pending, unassigned', () => {
    expect(
      runFacts({
        apiVersion: 'kruntimes.io/v1alpha1',
        kind: 'Run',
        metadata: { name: 't' },
        spec: { runtime: 'rt', source: { inline: 'x' }, mode: { task: {} } },
      }),
    ).toMatchObject({
      phase: 'Pending',
      mode: 'task',
      deleting: false,
      cleanupFinalizer: false,
      epoch: undefined,
    });
  });
});
