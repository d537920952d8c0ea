import { createHash } from 'node:crypto';
import type { ResumeStatus } from '@kruntimes/api';
import { decideResume } from './resume.ts';
import type { CheckpointRead } from './resume.ts';

const BYTES = Buffer.from('{"step":3}');
const digestOf = (bytes: Buffer) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
const RESUME: ResumeStatus = {
  checkpoint: { attempt: 2, digest: digestOf(BYTES), size: BYTES.length },
  responseId: 'r-1',
  runInput: 'approve-input',
  input: '{"approved":true}',
  attempt: 3,
};

test('the recorded bytes: ready, with the checkpoint, the attempt that stored it and the response', () => {
  expect(decideResume(RESUME, { type: 'found', bytes: BYTES })).toEqual({
    type: 'ready',
    resume: { checkpoint: BYTES, checkpointAttempt: 2, inputJson: '{"approved":true}', responseId: 'r-1' },
  });
});

test('an empty checkpoint is a checkpoint', () => {
  const empty = Buffer.alloc(0);
  const resume = { ...RESUME, checkpoint: { attempt: 1, digest: digestOf(empty), size: 0 } };
  expect(decideResume(resume, { type: 'found', bytes: empty })).toMatchObject({ type: 'ready' });
});

test.each<[string, CheckpointRead, string, RegExp]>([
  ['missing', { type: 'missing' }, 'ArtifactMissing', /^the checkpoint of attempt 2 is not in the store$/],
  ['larger than the bound', { type: 'larger' }, 'ArtifactInvalid', /larger than the 10 bytes recorded/],
  ['other bytes, same size', { type: 'found', bytes: Buffer.from('{"step":4}') }, 'ArtifactInvalid', /is not the one recorded/],
  [
    'shorter',
    { type: 'found', bytes: Buffer.from('{}') },
    'ArtifactInvalid',
    /\(2 bytes, sha256:[0-9a-f]{64}\) is not the one recorded \(10 bytes/,
  ],
])('%s: failed %s (not retried: the same object gives the same result)', (_case, read, reason, message) => {
  const decision = decideResume(RESUME, read);
  expect(decision).toMatchObject({ type: 'failed', reason });
  expect(decision.type === 'failed' ? decision.message : '').toMatch(message);
});
