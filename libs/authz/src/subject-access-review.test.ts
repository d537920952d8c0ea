import { KruntimesError } from '@kruntimes/errors';
import { RuntimeUseReviewer, runtimeUseKey } from './subject-access-review.ts';
import type { RuntimeUseAnswer, RuntimeUseRequest } from './subject-access-review.ts';

const ALICE: RuntimeUseRequest = { username: 'alice', groups: ['devs', 'system:authenticated'], namespace: 'team-a', runtime: 'shell' };

function reviewer(answers: (RuntimeUseAnswer | Error)[]): {
  reviewer: RuntimeUseReviewer;
  clock: { now: number };
  asked: RuntimeUseRequest[];
} {
  const clock = { now: 1_000_000 };
  const asked: RuntimeUseRequest[] = [];
  const review = (request: RuntimeUseRequest): Promise<RuntimeUseAnswer> => {
    asked.push(request);
    const next = answers.shift();
    if (next === undefined) return Promise.reject(new Error('no more answers'));
    return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
  };
  return { reviewer: new RuntimeUseReviewer({ review, now: () => clock.now, maxTtlMs: 30_000, maxDeniedTtlMs: 5_000 }), clock, asked };
}

const allowed: RuntimeUseAnswer = { decision: 'allowed', evaluationError: false, reason: '' };
const denied: RuntimeUseAnswer = { decision: 'denied', evaluationError: false, reason: 'no rule' };

describe('RuntimeUseReviewer', () => {
  it('remembers an allowed answer for maxTtlMs, then asks again', async () => {
    const { reviewer: r, clock, asked } = reviewer([allowed, denied]);
    expect(await r.review(ALICE)).toEqual(allowed);
    clock.now += 29_999;
    expect(await r.review(ALICE)).toEqual(allowed);
    clock.now += 1;
    expect(await r.review(ALICE)).toEqual(denied);
    expect(asked).toHaveLength(2);
  });

  it('remembers a denial only for maxDeniedTtlMs, and one with an evaluation error not at all', async () => {
    const { reviewer: r, clock, asked } = reviewer([denied, { ...denied, evaluationError: true }, allowed]);
    expect((await r.review(ALICE)).decision).toBe('denied');
    clock.now += 5_000;
    expect((await r.review(ALICE)).evaluationError).toBe(true);
    expect((await r.review(ALICE)).decision).toBe('allowed');
    expect(asked).toHaveLength(3);
  });

  it('shares one review among concurrent misses, and caches no failure', async () => {
    const failure = new KruntimesError('AuthorizationUnavailable', 'down');
    const { reviewer: r, asked } = reviewer([failure, allowed]);
    const both = await Promise.allSettled([r.review(ALICE), r.review(ALICE)]);
    expect(both.map((b) => b.status)).toEqual(['rejected', 'rejected']);
    expect(asked).toHaveLength(1);
    expect(await r.review(ALICE)).toEqual(allowed);
    expect(r.reviews).toBe(2);
  });

  it('keys by user, groups in any order, namespace and Runtime', () => {
    expect(runtimeUseKey(ALICE)).toBe(runtimeUseKey({ ...ALICE, groups: ['system:authenticated', 'devs'] }));
    for (const other of [{ username: 'bob' }, { groups: ['devs'] }, { namespace: 'team-b' }, { runtime: 'python' }]) {
      expect(runtimeUseKey({ ...ALICE, ...other })).not.toBe(runtimeUseKey(ALICE));
    }
  });

  it('refuses a cache bound that is not a positive integer', () => {
    expect(() => new RuntimeUseReviewer({ review: () => Promise.resolve(allowed), maxEntries: 0 })).toThrow(RangeError);
  });
});
