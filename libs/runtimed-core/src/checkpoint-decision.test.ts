import { BOUNDS } from '@kruntimes/api';
import { checkpointUnsupported, decideAwaitInput, decideCheckpointGrant } from './checkpoint-decision.ts';
import type { CheckpointFacts, WaitingAttempt } from './checkpoint-decision.ts';

const NOW = 1_000_000;
const SHA = 'a'.repeat(64);
const TASK: WaitingAttempt = { type: 'current', mode: 'task', store: 'results' };
const FACTS: CheckpointFacts = { attempt: TASK, size: 12, sha256: SHA, capabilities: ['checkpoint-v1'], runtime: 'rt' };
const LEASE = { nowMs: NOW, leaseExpiresAtMs: NOW + 90_000 };

describe('decideCheckpointGrant', () => {
  it('grants the PUT of the checkpoint: application/octet-stream, within the Lease and the grant bound', () => {
    expect(decideCheckpointGrant({ ...FACTS, ...LEASE })).toEqual({
      type: 'grant',
      store: 'results',
      size: 12,
      sha256Hex: SHA,
      mediaType: 'application/octet-stream',
      expiresInSeconds: 90,
    });
    expect(decideCheckpointGrant({ ...FACTS, ...LEASE, maxGrantSeconds: 30 })).toMatchObject({ expiresInSeconds: 30 });
    expect(decideCheckpointGrant({ ...FACTS, size: BOUNDS.checkpointBytes, ...LEASE })).toMatchObject({ type: 'grant' });
    expect(decideCheckpointGrant({ ...FACTS, size: 0, ...LEASE })).toMatchObject({ type: 'grant' });
  });

  it.each<[string, Partial<CheckpointFacts> & { leaseExpiresAtMs?: number | undefined }, string, RegExp]>([
    ['an unknown token', { attempt: { type: 'unknown' } }, 'StaleAttempt', /no running execution holds this grant token/],
    ['a stale attempt', { attempt: { type: 'stale', why: 'now at attempt 2' } }, 'StaleAttempt', /no longer current: now at attempt 2/],
    ['a function Run', { attempt: { ...TASK, mode: 'function' } }, 'CheckpointUnsupported', /a function Run, not a task/],
    ['no spec.artifacts', { attempt: { ...TASK, store: undefined } }, 'CheckpointUnsupported', /declares no spec.artifacts/],
    ['no capability', { capabilities: [] }, 'CheckpointUnsupported', /Runtime rt does not declare checkpoint-v1 in spec.capabilities/],
    ['over 1 MiB', { size: BOUNDS.checkpointBytes + 1 }, 'CheckpointTooLarge', /1048577 bytes, over 1048576/],
    ['a negative size', { size: -1 }, 'InvalidRequest', /not a byte count/],
    ['a fractional size', { size: 1.5 }, 'InvalidRequest', /not a byte count/],
    ['a bad sha256', { sha256: 'A'.repeat(64) }, 'InvalidRequest', /64 lowercase hex/],
    ['a Lease never renewed', { leaseExpiresAtMs: undefined }, 'OwnerUnavailable', /never renewed/],
    ['a Lease expired', { leaseExpiresAtMs: NOW - 1 }, 'OwnerUnavailable', /expired/],
  ])('refuses %s', (_name, change, code, message) => {
    const decision = decideCheckpointGrant({ ...FACTS, ...LEASE, ...change });
    expect(decision).toMatchObject({ type: 'refuse', code });
    expect(decision.type === 'refuse' ? decision.message : '').toMatch(message);
  });

  it('a stale attempt is refused before anything else is looked at (no hint about what it could have done)', () => {
    expect(decideCheckpointGrant({ ...FACTS, attempt: { type: 'stale', why: 'x' }, capabilities: [], size: -1, ...LEASE })).toMatchObject({
      code: 'StaleAttempt',
    });
  });
});

describe('decideAwaitInput', () => {
  const schema = '{"type":"object","properties":{"approved":{"type":"boolean"}}}';

  it('goes on to the store with a schema that compiles (true too)', () => {
    expect(decideAwaitInput({ ...FACTS, schemaJson: schema })).toEqual({
      type: 'verify',
      store: 'results',
      size: 12,
      sha256Hex: SHA,
      schema,
    });
    expect(decideAwaitInput({ ...FACTS, schemaJson: 'true' })).toMatchObject({ type: 'verify' });
  });

  it.each<[string, Partial<CheckpointFacts> & { schemaJson?: string }, string, RegExp]>([
    ['not JSON', { schemaJson: '{' }, 'InputSchemaInvalid', /not JSON/],
    ['not a schema', { schemaJson: '[1]' }, 'InputSchemaInvalid', /an object or a boolean/],
    ['an invalid keyword value', { schemaJson: '{"type":"banana"}' }, 'InputSchemaInvalid', /not a valid JSON Schema/],
    [
      'over 16 KiB',
      { schemaJson: JSON.stringify({ description: 'x'.repeat(BOUNDS.inputSchemaBytes) }) },
      'InputSchemaInvalid',
      /over 16384 bytes/,
    ],
    ['no capability, whatever the schema', { capabilities: [], schemaJson: '{' }, 'CheckpointUnsupported', /checkpoint-v1/],
    ['a stale attempt', { attempt: { type: 'stale', why: 'its cancel was requested' } }, 'StaleAttempt', /cancel was requested/],
    ['over 1 MiB', { size: BOUNDS.checkpointBytes + 1 }, 'CheckpointTooLarge', /over 1048576/],
  ])('refuses %s', (_name, change, code, message) => {
    const decision = decideAwaitInput({ ...FACTS, schemaJson: schema, ...change });
    expect(decision).toMatchObject({ type: 'refuse', code });
    expect(decision.type === 'refuse' ? decision.message : '').toMatch(message);
  });

  it('needs no Lease: the status write is fenced on its own', () => {
    expect(decideAwaitInput({ ...FACTS, schemaJson: 'true' }).type).toBe('verify');
  });
});

test('checkpointUnsupported names everything that is missing at once', () => {
  expect(checkpointUnsupported({ mode: 'function', store: undefined }, [], 'rt')).toBe(
    'waiting for input is not available: the Run is a function Run, not a task; the Run declares no spec.artifacts (its ArtifactStore keeps the checkpoint); Runtime rt does not declare checkpoint-v1 in spec.capabilities',
  );
  expect(checkpointUnsupported({ mode: 'task', store: 'results' }, ['checkpoint-v1'], 'rt')).toBeUndefined();
});
