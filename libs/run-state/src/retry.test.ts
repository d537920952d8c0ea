import { BOUNDS, DEFAULTS } from '@kruntimes/api';
import { backoffSeconds, decideRetry, resolveRetryPolicy } from './retry.ts';

describe('resolveRetryPolicy', () => {
  it('applies defaults', () => {
    expect(resolveRetryPolicy(undefined)).toEqual({
      maxAttempts: DEFAULTS.maxAttempts,
      initialBackoffSeconds: DEFAULTS.initialBackoffSeconds,
      maxBackoffSeconds: DEFAULTS.maxBackoffSeconds,
      retrySafe: false,
    });
  });

  it('clamps to the bounds', () => {
    expect(resolveRetryPolicy({ maxAttempts: 99, maxBackoffSeconds: 99_999, initialBackoffSeconds: 99_999 })).toMatchObject({
      maxAttempts: BOUNDS.maxAttempts,
      maxBackoffSeconds: BOUNDS.maxBackoffSeconds,
      initialBackoffSeconds: BOUNDS.maxBackoffSeconds,
    });
    expect(resolveRetryPolicy({ maxAttempts: 0 }).maxAttempts).toBe(1);
  });
});

describe('backoffSeconds', () => {
  const policy = resolveRetryPolicy({ initialBackoffSeconds: 5, maxBackoffSeconds: 30 });
  it.each([
    [2, 5],
    [3, 10],
    [4, 20],
    [5, 30],
    [9, 30],
  ])('before attempt %d waits %d s', (attempt, seconds) => {
    expect(backoffSeconds(policy, attempt)).toBe(seconds);
  });
});

describe('decideRetry', () => {
  it.each([
    // mode, retrySafe, attempt, cause, expected
    ['task', false, 1, 'attemptFailed', { retry: true, nextAttempt: 2 }],
    ['task', false, 3, 'attemptFailed', { retry: false, outcome: 'Failed', why: 'retriesExhausted' }],
    ['task', false, 1, 'ownerLost', { retry: false, outcome: 'Interrupted', why: 'notRetrySafe' }],
    ['task', false, 3, 'ownerLost', { retry: false, outcome: 'Interrupted', why: 'notRetrySafe' }],
    ['task', true, 1, 'ownerLost', { retry: true, nextAttempt: 2 }],
    ['task', true, 3, 'ownerLost', { retry: false, outcome: 'Failed', why: 'retriesExhausted' }],
    ['task', false, 1, 'ownerLostBeforeStart', { retry: true, nextAttempt: 2 }],
    ['function', false, 1, 'ownerLost', { retry: true, nextAttempt: 2 }],
    ['function', false, 2, 'attemptFailed', { retry: true, nextAttempt: 3 }],
    ['function', false, 3, 'ownerLost', { retry: false, outcome: 'Failed', why: 'retriesExhausted' }],
    ['function', false, 0, 'attemptFailed', { retry: true, nextAttempt: 2 }],
  ] as const)('%s retrySafe=%s attempt=%d %s', (mode, retrySafe, attempt, cause, expected) => {
    expect(decideRetry(mode, { maxAttempts: 3, retrySafe }, attempt, cause)).toMatchObject(expected);
  });
});
