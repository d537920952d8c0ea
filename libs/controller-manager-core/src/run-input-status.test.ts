import type { Run, RunInput, RunInputStatus } from '@kruntimes/api';
import { decideResponse, runInputStatus } from './run-input-status.ts';

const SCHEMA = JSON.stringify({ type: 'object', properties: { approved: { type: 'boolean' } }, required: ['approved'] });

function input(name: string, responseId = 'r-1'): RunInput {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'RunInput',
    metadata: { name, namespace: 'ns', generation: 1 },
    spec: { runName: 'report', responseId, data: { approved: true } },
  };
}

function continued(byRunInput: string): Run {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name: 'report', namespace: 'ns', uid: 'u-1' },
    spec: { runtime: 'python', source: { inline: 'x' }, mode: { task: {} } },
    status: {
      phase: 'Pending',
      attempt: 2,
      responses: [{ responseId: 'r-1', runInput: byRunInput, attempt: 2, time: '2026-01-01T00:01:00Z' }],
    },
  };
}

describe('decideResponse', () => {
  it('a response ID the Run accepted from this very RunInput is its own lost status write: recorded, not a duplicate', () => {
    expect(decideResponse(input('report-input-a'), continued('report-input-a'))).toEqual({ type: 'recorded', attempt: 2 });
  });

  it('the same response ID from another RunInput is a duplicate with the attempt it started', () => {
    expect(decideResponse(input('report-input-b'), continued('report-input-a'))).toMatchObject({ type: 'duplicate', attempt: 2 });
  });

  it('otherwise decideRunInput decides', () => {
    expect(decideResponse(input('report-input-b', 'r-2'), continued('report-input-a'))).toMatchObject({
      type: 'refuse',
      reason: 'RunNotWaiting',
    });
    const waiting: Run = {
      ...continued('x'),
      status: {
        phase: 'WaitingInput',
        attempt: 1,
        waitingInput: { schema: SCHEMA, checkpoint: { attempt: 1, digest: `sha256:${'a'.repeat(64)}`, size: 1 }, since: 't' },
      },
    };
    expect(decideResponse(input('report-input-b'), waiting)).toMatchObject({ type: 'accept', runInput: 'report-input-b' });
  });
});

describe('runInputStatus', () => {
  const t1 = '2026-01-01T00:00:00Z';
  const t2 = '2026-01-01T00:05:00Z';

  it('accepted: Accepted=True, the attempt and the Run UID, observedGeneration', () => {
    const status = runInputStatus(undefined, { kind: 'accepted', attempt: 2, runUID: 'u-1', message: 'ok' }, 1, t1);
    expect(status).toEqual({
      observedGeneration: 1,
      runUID: 'u-1',
      attempt: 2,
      conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: 'ok', lastTransitionTime: t1, observedGeneration: 1 }],
    });
  });

  it('duplicate: Accepted=True with reason DuplicateResponse and the attempt it had started', () => {
    const status = runInputStatus(undefined, { kind: 'duplicate', attempt: 3, runUID: 'u-1', message: 'dup' }, 1, t1);
    expect(status.conditions?.[0]).toMatchObject({ status: 'True', reason: 'DuplicateResponse' });
    expect(status.attempt).toBe(3);
  });

  it('refused: Accepted=False with the reason and message, no attempt; no runUID when there is no Run', () => {
    const status = runInputStatus(undefined, { kind: 'refused', reason: 'RunNotFound', message: 'Run report not found' }, 1, t1);
    expect(status).toEqual({
      observedGeneration: 1,
      conditions: [
        {
          type: 'Accepted',
          status: 'False',
          reason: 'RunNotFound',
          message: 'Run report not found',
          lastTransitionTime: t1,
          observedGeneration: 1,
        },
      ],
    });
  });

  it('lastTransitionTime moves only when the status flips, and the previous status is not modified', () => {
    const previous: RunInputStatus = {
      conditions: [
        { type: 'Accepted', status: 'False', reason: 'RunNotWaiting', message: 'm', lastTransitionTime: t1, observedGeneration: 0 },
      ],
    };
    const frozen = structuredClone(previous);
    const same = runInputStatus(previous, { kind: 'refused', reason: 'InputInvalid', message: 'bad' }, 1, t2);
    expect(same.conditions?.[0]).toMatchObject({ reason: 'InputInvalid', lastTransitionTime: t1, observedGeneration: 1 });
    const flipped = runInputStatus(previous, { kind: 'accepted', attempt: 2, runUID: 'u', message: 'ok' }, 1, t2);
    expect(flipped.conditions?.[0]).toMatchObject({ status: 'True', lastTransitionTime: t2 });
    expect(previous).toEqual(frozen);
  });

  it('bounds the message', () => {
    const status = runInputStatus(undefined, { kind: 'refused', reason: 'InputInvalid', message: 'x'.repeat(100_000) }, 1, t1);
    expect(status.conditions?.[0]?.message.length).toBeLessThan(100_000);
  });
});
