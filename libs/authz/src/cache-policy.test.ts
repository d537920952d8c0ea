import { cacheKey, decisionTtlMs, tokenExpiryMs } from './cache-policy.ts';

const NOW = 1_800_000_000_000;
const MAX = 30_000;

function b64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** An unsigned JWT: the policy decodes, never verifies. */
export function jwt(claims: Record<string, unknown>): string {
  return `${b64url({ alg: 'RS256', typ: 'JWT' })}.${b64url(claims)}.c2lnbmF0dXJl`;
}

describe('decisionTtlMs', () => {
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
    expect(decisionTtlMs(token, NOW, maxTtlMs)).toBe(expected);
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
