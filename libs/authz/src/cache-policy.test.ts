import { cacheKey, decisionTtlMs, tokenExpiryMs } from './cache-policy.ts';
import type { DecisionTtls } from './cache-policy.ts';
import type { ReviewAnswer } from './self-subject-access-review.ts';

const NOW = 1_800_000_000_000;
const MAX = 30_000;
const DENIED_MAX = 5_000;
const TTLS: DecisionTtls = { maxTtlMs: MAX, maxDeniedTtlMs: DENIED_MAX };
const ALLOWED: ReviewAnswer = { decision: 'allowed', evaluationError: false };

function b64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** An unsigned JWT: the policy decodes, never verifies. */
export function jwt(claims: Record<string, unknown>): string {
  return `${b64url({ alg: 'RS256', typ: 'JWT' })}.${b64url(claims)}.c2lnbmF0dXJl`;
}

describe('decisionTtlMs of an allowed answer', () => {
  const cases: [string, string, number, number][] = [
    ['an opaque token gets maxTtlMs', 'static-token-abc', MAX, MAX],
    ['a JWT without exp gets maxTtlMs', jwt({ sub: 'x' }), MAX, MAX],
    ['a JWT with a non-numeric exp gets maxTtlMs', jwt({ exp: 'soon' }), MAX, MAX],
    ['a three-part token that is not JSON gets maxTtlMs', 'aaa.bbb.ccc', MAX, MAX],
    ['a JWT expiring after maxTtlMs gets maxTtlMs', jwt({ exp: NOW / 1000 + 3600 }), MAX, MAX],
    ['a JWT expiring within maxTtlMs is cached until exp', jwt({ exp: NOW / 1000 + 5 }), MAX, 5_000],
    ['a JWT expiring exactly now is not cached', jwt({ exp: NOW / 1000 }), MAX, 0],
    ['an expired JWT is not cached', jwt({ exp: NOW / 1000 - 60 }), MAX, 0],
    ['maxTtlMs 0 turns caching off', 'opaque', 0, 0],
    ['a negative maxTtlMs turns caching off', jwt({ exp: NOW / 1000 + 5 }), -1, 0],
  ];
  it.each(cases)('%s', (_name, token, maxTtlMs, expected) => {
    expect(decisionTtlMs(ALLOWED, token, NOW, { ...TTLS, maxTtlMs })).toBe(expected);
  });
});

describe('decisionTtlMs by answer: denials are remembered far shorter than allowed', () => {
  const cases: [string, ReviewAnswer, string, DecisionTtls, number][] = [
    ['allowed gets maxTtlMs', ALLOWED, 'opaque', TTLS, MAX],
    [
      'allowed with an evaluation error still gets maxTtlMs: some rule allowed it',
      { decision: 'allowed', evaluationError: true },
      'opaque',
      TTLS,
      MAX,
    ],
    ['denied gets maxDeniedTtlMs', { decision: 'denied', evaluationError: false }, 'opaque', TTLS, DENIED_MAX],
    ['unauthenticated gets maxDeniedTtlMs', { decision: 'unauthenticated', evaluationError: false }, 'opaque', TTLS, DENIED_MAX],
    ['denied with an evaluation error is not cached', { decision: 'denied', evaluationError: true }, 'opaque', TTLS, 0],
    [
      'denied never gets more than maxTtlMs',
      { decision: 'denied', evaluationError: false },
      'opaque',
      { maxTtlMs: 1_000, maxDeniedTtlMs: DENIED_MAX },
      1_000,
    ],
    [
      'maxTtlMs 0 turns caching of denials off too',
      { decision: 'denied', evaluationError: false },
      'opaque',
      { maxTtlMs: 0, maxDeniedTtlMs: DENIED_MAX },
      0,
    ],
    [
      'maxDeniedTtlMs 0 caches no denial',
      { decision: 'unauthenticated', evaluationError: false },
      'opaque',
      { maxTtlMs: MAX, maxDeniedTtlMs: 0 },
      0,
    ],
    [
      'a negative maxDeniedTtlMs caches no denial',
      { decision: 'denied', evaluationError: false },
      'opaque',
      { maxTtlMs: MAX, maxDeniedTtlMs: -1 },
      0,
    ],
    [
      'denied for a JWT expiring within maxDeniedTtlMs: until exp',
      { decision: 'denied', evaluationError: false },
      jwt({ exp: NOW / 1000 + 2 }),
      TTLS,
      2_000,
    ],
    [
      'denied for a JWT expiring after maxDeniedTtlMs: maxDeniedTtlMs',
      { decision: 'denied', evaluationError: false },
      jwt({ exp: NOW / 1000 + 20 }),
      TTLS,
      DENIED_MAX,
    ],
    [
      'unauthenticated for an expired JWT is not cached',
      { decision: 'unauthenticated', evaluationError: false },
      jwt({ exp: NOW / 1000 - 1 }),
      TTLS,
      0,
    ],
  ];
  it.each(cases)('%s', (_name, answer, token, ttls, expected) => {
    expect(decisionTtlMs(answer, token, NOW, ttls)).toBe(expected);
  });
});

describe('tokenExpiryMs', () => {
  it.each([
    ['opaque', undefined],
    [jwt({ exp: 1_700_000_000 }), 1_700_000_000_000],
    [jwt({}), undefined],
  ] as const)('%s -> %s', (token, expected) => {
    expect(tokenExpiryMs(token)).toBe(expected);
  });
});

describe('cacheKey', () => {
  const base = { token: 'secret-token', namespace: 'ns', name: 'run', uid: 'u-1' };
  it('is the token hash plus namespace, name and UID, without the raw token', () => {
    const key = cacheKey(base);
    expect(key).toMatch(/^[0-9a-f]{64}\/ns\/run\/u-1$/);
    expect(key).not.toContain('secret-token');
    expect(cacheKey({ ...base })).toBe(key);
  });
  it.each([
    ['token', { ...base, token: 'other-token' }],
    ['namespace', { ...base, namespace: 'ns2' }],
    ['name', { ...base, name: 'run2' }],
    ['uid', { ...base, uid: 'u-2' }],
  ])('differs when the %s differs', (_part, other) => {
    expect(cacheKey(other)).not.toBe(cacheKey(base));
  });
});
