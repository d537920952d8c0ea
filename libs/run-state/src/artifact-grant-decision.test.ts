import type { DeclaredArtifact } from '@kruntimes/api';
import { decideGrant } from './artifact-grant-decision.ts';
import type { GrantDecision, GrantInput } from './artifact-grant-decision.ts';

const declared: DeclaredArtifact[] = [
  { id: 'report.csv', maxBytes: 1000, mediaType: 'text/csv' },
  { id: 'plot.png', maxBytes: 10, mediaType: 'image/png', optional: true },
];
const sha = 'a'.repeat(64);
const now = 1_000_000;
const base: GrantInput = {
  request: { artifactId: 'report.csv', size: 100, sha256: sha, mediaType: 'text/csv' },
  attempt: { type: 'current', declared },
  nowMs: now,
  leaseExpiresAtMs: now + 90_000,
};
const grant = (overrides: Partial<Extract<GrantDecision, { type: 'grant' }>> = {}): GrantDecision => ({
  type: 'grant',
  artifactId: 'report.csv',
  size: 100,
  sha256Hex: sha,
  mediaType: 'text/csv',
  expiresInSeconds: 90,
  ...overrides,
});

describe('decideGrant', () => {
  it.each<[string, Partial<GrantInput>, Partial<GrantInput['request']>, GrantDecision | { code: string; message: string }]>([
    ['a declared artifact of the current attempt: until the Lease expires', {}, {}, grant()],
    ['an empty media type: the declared one', {}, { mediaType: '' }, grant()],
    ['exactly maxBytes', {}, { size: 1000 }, grant({ size: 1000 })],
    ['an empty file', {}, { size: 0 }, grant({ size: 0 })],
    ['a Lease far away: at most artifactGrantSeconds', { leaseExpiresAtMs: now + 3_600_000 }, {}, grant({ expiresInSeconds: 900 })],
    ['a shorter configured maximum', { maxGrantSeconds: 30 }, {}, grant({ expiresInSeconds: 30 })],
    ['a Lease 1.9 s away: 1 s, never past it', { leaseExpiresAtMs: now + 1_900 }, {}, grant({ expiresInSeconds: 1 })],
    ['an unknown token', { attempt: { type: 'unknown' } }, {}, { code: 'StaleAttempt', message: 'no running execution' }],
    [
      'an attempt no longer current',
      { attempt: { type: 'stale', why: 'now at attempt 2' } },
      {},
      { code: 'StaleAttempt', message: 'no longer current: now at attempt 2' },
    ],
    ['an undeclared artifact', {}, { artifactId: 'other.csv' }, { code: 'ArtifactNotDeclared', message: '"other.csv" is not declared' }],
    ['another media type', {}, { mediaType: 'text/plain' }, { code: 'ArtifactNotDeclared', message: 'declared as text/csv' }],
    ['one byte over maxBytes', {}, { size: 1001 }, { code: 'ArtifactTooLarge', message: '1001 bytes is over its maxBytes 1000' }],
    ['a negative size', {}, { size: -1 }, { code: 'InvalidRequest', message: 'not a byte count' }],
    ['a fractional size', {}, { size: 1.5 }, { code: 'InvalidRequest', message: 'not a byte count' }],
    ['uppercase hex', {}, { sha256: 'A'.repeat(64) }, { code: 'InvalidRequest', message: 'sha256' }],
    ['a short digest', {}, { sha256: 'ab' }, { code: 'InvalidRequest', message: 'sha256' }],
    ['a Lease never renewed', { leaseExpiresAtMs: undefined }, {}, { code: 'OwnerUnavailable', message: 'never renewed' }],
    ['a Lease already past', { leaseExpiresAtMs: now - 1 }, {}, { code: 'OwnerUnavailable', message: 'expired' }],
    ['a Lease under a second away', { leaseExpiresAtMs: now + 999 }, {}, { code: 'OwnerUnavailable', message: 'expired' }],
  ])('%s', (_what, input, request, expected) => {
    const decision = decideGrant({ ...base, ...input, request: { ...base.request, ...request } });
    if ('type' in expected) {
      expect(decision).toEqual(expected);
    } else {
      expect(decision).toMatchObject({ type: 'refuse', code: expected.code });
      expect(decision.type === 'refuse' ? decision.message : '').toContain(expected.message);
    }
  });

  it('checks staleness before anything the request says', () => {
    const decision = decideGrant({ ...base, attempt: { type: 'unknown' }, request: { ...base.request, artifactId: 'nope', size: -1 } });
    expect(decision).toMatchObject({ type: 'refuse', code: 'StaleAttempt' });
  });
});
