import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { KruntimesError, isKruntimesError } from '@kruntimes/errors';
import type { ErrorCode } from '@kruntimes/errors';
import { AccessReviewer, DEFAULT_MAX_DENIED_TTL_MS, DEFAULT_MAX_TTL_MS } from './access-reviewer.ts';
import type { AccessReviewerOptions } from './access-reviewer.ts';
import type { AccessRequest } from './cache-policy.ts';
import { AuthzCounters } from './metrics.ts';
import type { ReviewAnswer, ReviewDecision } from './self-subject-access-review.ts';

const T0 = 1_800_000_000_000;

function jwt(claims: Record<string, unknown>): string {
  const part = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'RS256' })}.${part(claims)}.c2ln`;
}

function request(overrides: Partial<AccessRequest> = {}): AccessRequest {
  return { token: 'alice-token', namespace: 'ns', name: 'fn', uid: 'uid-1', ...overrides };
}

async function codeOf(promise: Promise<unknown>): Promise<ErrorCode | 'ok'> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    if (isKruntimesError(error)) return error.code;
    throw error;
  }
}

/** An AccessReviewer over a scripted reviewer (a bare decision has no evaluation error) and a hand-moved clock. */
function setup(answer: (request: AccessRequest) => Promise<ReviewDecision | ReviewAnswer>, options: Partial<AccessReviewerOptions> = {}) {
  const clock = { now: T0 };
  const metrics = new AuthzCounters();
  const calls: AccessRequest[] = [];
  const reviewer = new AccessReviewer({
    kubeConfig: new KubeConfig(),
    now: () => clock.now,
    metrics,
    review: async (req) => {
      calls.push(req);
      const given = await answer(req);
      return typeof given === 'string' ? { decision: given, evaluationError: false } : given;
    },
    ...options,
  });
  return { clock, metrics, calls, reviewer };
}

describe('AccessReviewer cache', () => {
  it.each([
    ['allowed', 'ok', DEFAULT_MAX_TTL_MS],
    ['denied', 'Forbidden', DEFAULT_MAX_DENIED_TTL_MS],
    ['unauthenticated', 'Unauthenticated', DEFAULT_MAX_DENIED_TTL_MS],
  ] as const)('caches a %s decision for %#, %s ms, then reviews again', async (decision, code, ttlMs) => {
    const { clock, metrics, calls, reviewer } = setup(() => Promise.resolve(decision));
    expect(await codeOf(reviewer.authorize(request()))).toBe(code);
    clock.now += ttlMs - 1;
    expect(await codeOf(reviewer.authorize(request()))).toBe(code);
    expect(calls).toHaveLength(1);
    clock.now += 1;
    expect(await codeOf(reviewer.authorize(request()))).toBe(code);
    expect(calls).toHaveLength(2);
    expect(metrics.cacheRequests).toEqual({ hit: 1, miss: 2 });
    expect(metrics.reviews[decision]).toBe(2);
  });

  it('never caches past the JWT exp', async () => {
    const token = jwt({ exp: T0 / 1000 + 2 });
    const { clock, calls, reviewer } = setup(() => Promise.resolve('allowed'));
    await reviewer.authorize(request({ token }));
    clock.now += 1_999;
    await reviewer.authorize(request({ token }));
    expect(calls).toHaveLength(1);
    clock.now += 1;
    await reviewer.authorize(request({ token }));
    expect(calls).toHaveLength(2);
  });

  it('does not cache the decision for an expired token', async () => {
    const token = jwt({ exp: T0 / 1000 - 1 });
    const { calls, reviewer, metrics } = setup(() => Promise.resolve('unauthenticated'));
    expect(await codeOf(reviewer.authorize(request({ token })))).toBe('Unauthenticated');
    expect(await codeOf(reviewer.authorize(request({ token })))).toBe('Unauthenticated');
    expect(calls).toHaveLength(2);
    expect(reviewer.size).toBe(0);
    expect(metrics.cacheRequests).toEqual({ hit: 0, miss: 2 });
  });

  it('keys decisions by token, namespace, name and UID', async () => {
    const { calls, reviewer } = setup((req) => Promise.resolve(req.token === 'alice-token' && req.name === 'fn' ? 'allowed' : 'denied'));
    expect(await codeOf(reviewer.authorize(request()))).toBe('ok');
    expect(await codeOf(reviewer.authorize(request({ token: 'bob-token' })))).toBe('Forbidden');
    expect(await codeOf(reviewer.authorize(request({ name: 'other' })))).toBe('Forbidden');
    expect(await codeOf(reviewer.authorize(request({ uid: 'uid-2' })))).toBe('ok');
    expect(await codeOf(reviewer.authorize(request({ namespace: 'ns2' })))).toBe('ok');
    expect(calls).toHaveLength(5);
  });

  it('remembers denials far shorter than allowed answers by default', () => {
    expect(DEFAULT_MAX_DENIED_TTL_MS).toBeLessThanOrEqual(DEFAULT_MAX_TTL_MS / 5);
  });

  it('a denial from an API server whose RBAC was not loaded yet gives way to the allow within maxDeniedTtlMs', async () => {
    let loaded = false;
    const { clock, calls, reviewer } = setup(() => Promise.resolve(loaded ? 'allowed' : 'denied'), { maxDeniedTtlMs: 2_000 });
    expect(await codeOf(reviewer.authorize(request()))).toBe('Forbidden');
    loaded = true;
    clock.now += 1_999;
    expect(await codeOf(reviewer.authorize(request()))).toBe('Forbidden');
    clock.now += 1;
    expect(await codeOf(reviewer.authorize(request()))).toBe('ok');
    clock.now += DEFAULT_MAX_TTL_MS - 1;
    expect(await codeOf(reviewer.authorize(request()))).toBe('ok');
    expect(calls).toHaveLength(2);
  });

  it('does not cache a denial the authorizer reached with an evaluation error', async () => {
    let answer: ReviewAnswer = { decision: 'denied', evaluationError: true };
    const { calls, reviewer, metrics } = setup(() => Promise.resolve(answer));
    expect(await codeOf(reviewer.authorize(request()))).toBe('Forbidden');
    expect(reviewer.size).toBe(0);
    answer = { decision: 'allowed', evaluationError: false };
    expect(await codeOf(reviewer.authorize(request()))).toBe('ok');
    expect(calls).toHaveLength(2);
    expect(metrics.reviews).toEqual({ allowed: 1, denied: 1, unauthenticated: 0, error: 0 });
  });

  it('AuthorizationUnavailable passes through and is not cached: the next call reviews again', async () => {
    let down = true;
    const { calls, reviewer, metrics } = setup(() =>
      down ? Promise.reject(new KruntimesError('AuthorizationUnavailable', 'HTTP 503')) : Promise.resolve('allowed'),
    );
    expect(await codeOf(reviewer.authorize(request()))).toBe('AuthorizationUnavailable');
    expect(await codeOf(reviewer.authorize(request()))).toBe('AuthorizationUnavailable');
    expect(reviewer.size).toBe(0);
    down = false;
    expect(await codeOf(reviewer.authorize(request()))).toBe('ok');
    expect(calls).toHaveLength(3);
    expect(metrics.reviews).toEqual({ allowed: 1, denied: 0, unauthenticated: 0, error: 2 });
  });

  it('does not cache failures: the next call reviews again', async () => {
    let fail = true;
    const { calls, reviewer, metrics } = setup(() =>
      fail ? Promise.reject(new Error('connect ECONNREFUSED')) : Promise.resolve('allowed'),
    );
    expect(await codeOf(reviewer.authorize(request()))).toBe('Internal');
    fail = false;
    expect(await codeOf(reviewer.authorize(request()))).toBe('ok');
    expect(calls).toHaveLength(2);
    expect(metrics.reviews).toEqual({ allowed: 1, denied: 0, unauthenticated: 0, error: 1 });
  });

  it('wraps an untyped failure as Internal', async () => {
    const { reviewer } = setup(() => Promise.reject(new Error('x')));
    await expect(reviewer.authorize(request())).rejects.toThrow('authz: SelfSubjectAccessReview failed');
  });

  it('answers Unauthenticated for an empty or unsendable token without a review', async () => {
    const { calls, reviewer } = setup(() => Promise.resolve('allowed'));
    expect(await codeOf(reviewer.authorize(request({ token: '' })))).toBe('Unauthenticated');
    expect(await codeOf(reviewer.authorize(request({ token: 'a b' })))).toBe('Unauthenticated');
    expect(await codeOf(reviewer.authorize(request({ token: 'a\nb' })))).toBe('Unauthenticated');
    expect(calls).toHaveLength(0);
  });

  it('never puts the token into an error', async () => {
    const token = 'very-secret-token-value';
    for (const decision of ['denied', 'unauthenticated'] as const) {
      const { reviewer } = setup(() => Promise.resolve(decision));
      const error = await reviewer.authorize(request({ token })).catch((e: unknown) => e);
      expect(JSON.stringify({ message: (error as Error).message, stack: (error as Error).stack })).not.toContain(token);
    }
  });
});

describe('AccessReviewer LRU bound', () => {
  it('keeps at most maxEntries decisions, evicting the least recently used', async () => {
    const { calls, reviewer } = setup(() => Promise.resolve('allowed'), { maxEntries: 2 });
    await reviewer.authorize(request({ name: 'a' }));
    await reviewer.authorize(request({ name: 'b' }));
    await reviewer.authorize(request({ name: 'a' })); // a is now the most recently used
    await reviewer.authorize(request({ name: 'c' })); // evicts b
    expect(reviewer.size).toBe(2);
    expect(calls.map((c) => c.name)).toEqual(['a', 'b', 'c']);
    await reviewer.authorize(request({ name: 'a' }));
    expect(calls).toHaveLength(3);
    await reviewer.authorize(request({ name: 'b' }));
    expect(calls.map((c) => c.name)).toEqual(['a', 'b', 'c', 'b']);
  });

  it.each([0, -1, 1.5])('refuses maxEntries %s', (maxEntries) => {
    expect(() => setup(() => Promise.resolve('allowed'), { maxEntries })).toThrow(RangeError);
  });
});

describe('AccessReviewer single-flight', () => {
  function deferred(): { promise: Promise<ReviewDecision>; resolve: (d: ReviewDecision) => void; reject: (e: Error) => void } {
    let resolve!: (d: ReviewDecision) => void;
    let reject!: (e: Error) => void;
    const promise = new Promise<ReviewDecision>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  }

  it('concurrent identical misses share one review', async () => {
    const gate = deferred();
    const { calls, reviewer, metrics } = setup(() => gate.promise);
    const all = Array.from({ length: 5 }, () => codeOf(reviewer.authorize(request())));
    const other = codeOf(reviewer.authorize(request({ name: 'other' })));
    expect(calls.map((c) => c.name)).toEqual(['fn', 'other']);
    gate.resolve('denied');
    expect(await Promise.all(all)).toEqual(Array(5).fill('Forbidden'));
    expect(await other).toBe('Forbidden');
    expect(metrics.reviews.denied).toBe(2);
    expect(metrics.cacheRequests).toEqual({ hit: 0, miss: 6 });
    // Settled and cached: a later call is a hit.
    expect(await codeOf(reviewer.authorize(request()))).toBe('Forbidden');
    expect(metrics.cacheRequests.hit).toBe(1);
  });

  it('a failed shared review fails every waiter once; the next call starts a new one', async () => {
    const gate = deferred();
    let first = true;
    const { calls, reviewer } = setup(() => {
      if (first) {
        first = false;
        return gate.promise;
      }
      return Promise.resolve('allowed');
    });
    const all = Array.from({ length: 3 }, () => codeOf(reviewer.authorize(request())));
    gate.reject(new Error('socket hang up'));
    expect(await Promise.all(all)).toEqual(['Internal', 'Internal', 'Internal']);
    expect(await codeOf(reviewer.authorize(request()))).toBe('ok');
    expect(calls).toHaveLength(2);
  });

  it('a reviewer that throws synchronously does not wedge the key', async () => {
    let n = 0;
    const { reviewer } = setup(() => {
      n += 1;
      if (n === 1) throw new Error('sync');
      return Promise.resolve('allowed');
    });
    expect(await codeOf(reviewer.authorize(request()))).toBe('Internal');
    expect(await codeOf(reviewer.authorize(request()))).toBe('ok');
  });
});

async function closedPort(): Promise<number> {
  return new Promise<number>((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        resolve(typeof address === 'object' && address !== null ? address.port : 0);
      });
    });
  });
}

describe('AccessReviewer with the real SelfSubjectAccessReview call', () => {
  it('a CA file that cannot be read yet fails the review, and is read again at the next one', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'authz-ca-'));
    try {
      const caFile = join(dir, 'ca.crt');
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromOptions({
        clusters: [{ name: 'c', server: `https://127.0.0.1:${await closedPort()}`, caFile, skipTLSVerify: false }],
        users: [{ name: 'u' }],
        contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
        currentContext: 'x',
      });
      const reviewer = new AccessReviewer({ kubeConfig });
      const first = await reviewer.authorize(request()).catch((e: unknown) => e);
      expect(isKruntimesError(first, 'Internal')).toBe(true);
      expect(String((first as Error).cause)).toMatch(/ENOENT/);
      await writeFile(caFile, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
      const second = await reviewer.authorize(request()).catch((e: unknown) => e);
      // Read this time: the review got as far as the (closed) port.
      expect(isKruntimesError(second, 'AuthorizationUnavailable')).toBe(true);
      expect(String((second as Error).cause)).not.toMatch(/ENOENT/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('an unreachable API server is AuthorizationUnavailable (retry) and is not cached', async () => {
    const port = await closedPort();
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'c', server: `https://127.0.0.1:${port}`, skipTLSVerify: false }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const metrics = new AuthzCounters();
    const reviewer = new AccessReviewer({ kubeConfig, metrics });
    const token = 'token-that-must-not-leak';
    const error = await reviewer.authorize(request({ token })).catch((e: unknown) => e);
    expect(isKruntimesError(error, 'AuthorizationUnavailable')).toBe(true);
    expect((error as Error).message).toMatch(/ECONNREFUSED/);
    expect((error as Error).message).not.toContain(token);
    await reviewer.authorize(request({ token })).catch(() => undefined);
    expect(metrics.reviews.error).toBe(2);
    expect(reviewer.size).toBe(0);
  });
});
