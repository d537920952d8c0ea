import type { Run, RunInput, RunPhase, RunStatus } from '@kruntimes/api';
import { decideRunInput, decideWaitingRun, isDecided, runInputName } from './run-input-decision.ts';

const SCHEMA = JSON.stringify({ type: 'object', properties: { approved: { type: 'boolean' } }, required: ['approved'] });
const DIGEST = `sha256:${'cd'.repeat(32)}`;

function run(phase: RunPhase | undefined, status: RunStatus = {}, spec: Partial<Run['spec']> = {}): Run {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name: 'report', namespace: 'ns', uid: 'u-1', generation: 1 },
    spec: { runtime: 'python', source: { inline: 'x' }, mode: { task: {} }, ...spec },
    status: { ...(phase === undefined ? {} : { phase }), ...status },
  };
}
const waiting = (status: RunStatus = {}, spec: Partial<Run['spec']> = {}): Run =>
  run(
    'WaitingInput',
    {
      attempt: 1,
      startTime: '2026-01-01T00:00:00Z',
      waitingInput: { schema: SCHEMA, checkpoint: { attempt: 1, digest: DIGEST, size: 3 }, since: '2026-01-01T00:00:05Z' },
      ...status,
    },
    spec,
  );

function response(data: unknown, extra: Partial<RunInput> = {}): RunInput {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'RunInput',
    metadata: { name: 'report-input-1', namespace: 'ns', generation: 1 },
    spec: { runName: 'report', responseId: 'r-1', data },
    ...extra,
  };
}

describe('decideRunInput', () => {
  it.each<[string, RunInput, Run | undefined, Record<string, unknown>]>([
    [
      'a valid response to a waiting Run: accept',
      response({ approved: true }),
      waiting(),
      { type: 'accept', responseId: 'r-1', runInput: 'report-input-1', input: '{"approved":true}' },
    ],
    ['no such Run', response({ approved: true }), undefined, { type: 'refuse', reason: 'RunNotFound' }],
    ['a Run not yet waiting', response({ approved: true }), run('Running', { attempt: 1 }), { type: 'refuse', reason: 'RunNotWaiting' }],
    ['a Run with no status', response({ approved: true }), run(undefined), { type: 'refuse', reason: 'RunNotWaiting' }],
    ['a finished Run', response({ approved: true }), run('Succeeded'), { type: 'refuse', reason: 'RunFinished' }],
    [
      'a cancelled waiting Run',
      response({ approved: true }),
      waiting({}, { cancelRequested: true }),
      { type: 'refuse', reason: 'RunCancelled' },
    ],
    [
      'a waiting Run without a schema',
      response({ approved: true }),
      run('WaitingInput', { attempt: 1 }),
      { type: 'refuse', reason: 'RunNotWaiting' },
    ],
    ['data that fails the schema', response({ approved: 'yes' }), waiting(), { type: 'refuse', reason: 'InputInvalid' }],
    ['data over the bound', response({ approved: true, blob: 'x'.repeat(70_000) }), waiting(), { type: 'refuse', reason: 'InputTooLarge' }],
    [
      'a response ID the Run accepted before (it continued): duplicate, whatever the phase',
      response({ approved: true }),
      run('Running', { attempt: 2, responses: [{ responseId: 'r-1', runInput: 'other', attempt: 2, time: '2026-01-01T00:01:00Z' }] }),
      { type: 'duplicate', attempt: 2 },
    ],
    [
      'a duplicate on a finished Run is still a duplicate',
      response({ approved: true }),
      run('Succeeded', { attempt: 2, responses: [{ responseId: 'r-1', runInput: 'other', attempt: 2, time: '2026-01-01T00:01:00Z' }] }),
      { type: 'duplicate', attempt: 2 },
    ],
    [
      'already decided for this generation: nothing',
      response(
        { approved: true },
        {
          status: {
            conditions: [
              { type: 'Accepted', status: 'False', reason: 'InputInvalid', message: '', lastTransitionTime: 't', observedGeneration: 1 },
            ],
          },
        },
      ),
      waiting(),
      { type: 'none' },
    ],
  ])('%s', (_name, input, current, expected) => {
    expect(decideRunInput(input, current)).toMatchObject(expected);
  });

  it('names the violation in the refusal', () => {
    const decision = decideRunInput(response({ approved: 'yes' }), waiting());
    expect(decision).toMatchObject({ message: expect.stringContaining('/approved: must be boolean') as unknown });
  });
});

describe('isDecided', () => {
  const condition = (status: 'True' | 'False' | 'Unknown', observedGeneration: number) => ({
    type: 'Accepted',
    status,
    reason: 'x',
    message: '',
    lastTransitionTime: 't',
    observedGeneration,
  });
  it.each<[string, RunInput['status'], boolean]>([
    ['no status', undefined, false],
    ['Accepted True for this generation', { conditions: [condition('True', 1)] }, true],
    ['Accepted False for this generation', { conditions: [condition('False', 1)] }, true],
    ['Unknown', { conditions: [condition('Unknown', 1)] }, false],
    ['an older generation', { conditions: [condition('True', 0)] }, false],
  ])('%s', (_name, status, decided) => {
    expect(isDecided(response({}, status === undefined ? {} : { status }))).toBe(decided);
  });
});

describe('decideWaitingRun', () => {
  const start = Date.parse('2026-01-01T00:00:00Z');
  it.each<[string, Run, number, Record<string, unknown>]>([
    ['not waiting', run('Running', { startTime: '2026-01-01T00:00:00Z' }, { timeout: '10s' }), start + 60_000, { type: 'none' }],
    ['waiting, no timeout', waiting(), start + 60_000, { type: 'none' }],
    ['waiting, cancel requested', waiting({}, { cancelRequested: true }), start, { type: 'cancel' }],
    ['waiting, timeout not yet passed', waiting({}, { timeout: '1m' }), start + 15_000, { type: 'requeue', afterMs: 45_000 }],
    ['waiting, timeout passed', waiting({}, { timeout: '1m' }), start + 60_000, { type: 'timeout' }],
    [
      'waiting without startTime',
      waiting({ startTime: undefined } as unknown as RunStatus, { timeout: '1m' }),
      start + 120_000,
      { type: 'none' },
    ],
  ])('%s', (_name, current, nowMs, expected) => {
    expect(decideWaitingRun(current, nowMs)).toMatchObject(expected);
  });
});

describe('runInputName', () => {
  it('is stable per response ID, differs between them, and is a DNS subdomain', () => {
    expect(runInputName('report', 'r-1')).toBe(runInputName('report', 'r-1'));
    expect(runInputName('report', 'r-1')).not.toBe(runInputName('report', 'r-2'));
    expect(runInputName('report', 'r-1')).toMatch(/^report-input-[0-9a-f]{10}$/);
    expect(runInputName('a'.repeat(253), 'x').length).toBeLessThanOrEqual(253);
  });
});
