import { Readable } from 'node:stream';
import type { RunInput } from '@kruntimes/api';
import { EXIT } from '../exit-codes.ts';
import { readResponse, refusalExitCode, respondOutcome, sameResponse } from './respond.ts';

function input(status?: RunInput['status'], data: unknown = { approved: true }): RunInput {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'RunInput',
    metadata: { name: 'report-input-0123456789', generation: 1 },
    spec: { runName: 'report', responseId: 'r-1', data },
    ...(status === undefined ? {} : { status }),
  };
}

const accepted = (status: 'True' | 'False', reason: string, message = '') => ({
  type: 'Accepted',
  status,
  reason,
  message,
  lastTransitionTime: '2026-01-01T00:00:00Z',
  observedGeneration: 1,
});

describe('respondOutcome', () => {
  it.each<[string, RunInput['status'], { exitCode: number; line: string }]>([
    ['accepted', { attempt: 2, conditions: [accepted('True', 'Accepted')] }, { exitCode: EXIT.ok, line: 'accepted: attempt 2 continues' }],
    [
      'a duplicate',
      { attempt: 2, conditions: [accepted('True', 'DuplicateResponse')] },
      { exitCode: EXIT.ok, line: 'already accepted (DuplicateResponse): attempt 2' },
    ],
    [
      'refused for bad input: usage',
      { conditions: [accepted('False', 'InputInvalid', '/approved: must be boolean')] },
      { exitCode: EXIT.usage, line: 'refused (InputInvalid): /approved: must be boolean' },
    ],
    [
      'refused: no such Run',
      { conditions: [accepted('False', 'RunNotFound', 'Run report not found')] },
      { exitCode: EXIT.notFound, line: 'refused (RunNotFound): Run report not found' },
    ],
    [
      'refused: not waiting',
      { conditions: [accepted('False', 'RunNotWaiting', 'Run report is Running')] },
      { exitCode: EXIT.unavailable, line: 'refused (RunNotWaiting): Run report is Running' },
    ],
  ])('%s', (_name, status, expected) => {
    expect(respondOutcome(input(status))).toEqual(expected);
  });
});

describe('refusalExitCode', () => {
  it.each([
    ['InputInvalid', EXIT.usage],
    ['InputTooLarge', EXIT.usage],
    ['RunNotFound', EXIT.notFound],
    ['RunFinished', EXIT.unavailable],
    ['RunCancelled', EXIT.unavailable],
  ])('%s -> %i', (reason, code) => {
    expect(refusalExitCode(reason)).toBe(code);
  });
});

describe('sameResponse', () => {
  it('the same Run, ID and JSON data (key order aside) is the same response; other data is not', () => {
    expect(sameResponse(input(undefined, { a: 1, b: [1, 2] }), input(undefined, { b: [1, 2], a: 1 }))).toBe(true);
    expect(sameResponse(input(undefined, { a: 1 }), input(undefined, { a: 2 }))).toBe(false);
    expect(sameResponse(input(undefined, null), input(undefined, null))).toBe(true);
  });
});

describe('readResponse', () => {
  const noStdin = { stdin: Readable.from([]) };
  it('parses --data and stdin as JSON', async () => {
    await expect(readResponse({ kind: 'data', json: '{"a":1}' }, noStdin)).resolves.toEqual({ a: 1 });
    const stdin = Readable.from([Buffer.from('[1,'), '2]']);
    await expect(readResponse({ kind: 'stdin' }, { stdin })).resolves.toEqual([1, 2]);
  });

  it('refuses what is not JSON, and a file it cannot read, as usage errors', async () => {
    await expect(readResponse({ kind: 'data', json: '{a:1}' }, noStdin)).rejects.toMatchObject({ exitCode: EXIT.usage });
    await expect(readResponse({ kind: 'file', path: '/nonexistent/r.json' }, noStdin)).rejects.toMatchObject({ exitCode: EXIT.usage });
  });
});
