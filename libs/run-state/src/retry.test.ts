import { BOUNDS, DEFAULTS } from '@kruntimes/api';
import {
  AUTOMATIC_RETRY_ALLOWED,
  backoffSeconds,
  decideRetry,
  resolveAutomaticRetryPolicy,
  resolveRetryPolicy,
  retryBudgetStart,
} from './retry.ts';
import type { AutomaticRetryPolicy } from './retry.ts';

describe('resolveRetryPolicy', () => {
  it('applies defaults', () => {
    expect(resolveRetryPolicy('function', undefined)).toEqual({
      maxAttempts: DEFAULTS.maxAttempts,
      initialBackoffSeconds: DEFAULTS.initialBackoffSeconds,
      maxBackoffSeconds: DEFAULTS.maxBackoffSeconds,
      retrySafe: false,
    });
  });

  it.each([
    // mode, policy, maxAttempts
    ['task', undefined, 1],
    ['task', {}, 1],
    ['task', { retrySafe: false }, 1],
    ['task', { retrySafe: true }, DEFAULTS.maxAttempts],
    ['task', { retrySafe: true, maxAttempts: 5 }, 5],
    // Refused by the CRD; a Run stored before that rule still runs once.
    ['task', { retrySafe: false, maxAttempts: 3 }, 1],
    ['function', undefined, DEFAULTS.maxAttempts],
    ['function', { retrySafe: false, maxAttempts: 5 }, 5],
  ] as const)('%s %j: %d attempts', (mode, policy, maxAttempts) => {
    expect(resolveRetryPolicy(mode, policy).maxAttempts).toBe(maxAttempts);
  });

  it('clamps to the bounds', () => {
    expect(
      resolveRetryPolicy('task', { retrySafe: true, maxAttempts: 99, maxBackoffSeconds: 99_999, initialBackoffSeconds: 99_999 }),
    ).toMatchObject({
      maxAttempts: BOUNDS.maxAttempts,
      maxBackoffSeconds: BOUNDS.maxBackoffSeconds,
      initialBackoffSeconds: BOUNDS.maxBackoffSeconds,
    });
    expect(resolveRetryPolicy('function', { maxAttempts: 0 }).maxAttempts).toBe(1);
  });
});

describe('backoffSeconds', () => {
  const policy = resolveRetryPolicy('function', { initialBackoffSeconds: 5, maxBackoffSeconds: 30 });
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
    // A task that is not retrySafe runs once, whatever maxAttempts says.
    ['task', false, 1, 'attemptFailed', { retry: false, outcome: 'Failed', why: 'retriesExhausted' }],
    ['task', false, 3, 'attemptFailed', { retry: false, outcome: 'Failed', why: 'retriesExhausted' }],
    ['task', true, 1, 'attemptFailed', { retry: true, nextAttempt: 2 }],
    ['task', true, 3, 'attemptFailed', { retry: false, outcome: 'Failed', why: 'retriesExhausted' }],
    ['task', false, 1, 'ownerLost', { retry: false, outcome: 'Interrupted', why: 'notRetrySafe' }],
    ['task', false, 3, 'ownerLost', { retry: false, outcome: 'Interrupted', why: 'notRetrySafe' }],
    ['task', true, 1, 'ownerLost', { retry: true, nextAttempt: 2 }],
    ['task', true, 3, 'ownerLost', { retry: false, outcome: 'Failed', why: 'retriesExhausted' }],
    // No code ran: retried within the default budget even for a task that runs once.
    ['task', false, 1, 'ownerLostBeforeStart', { retry: true, nextAttempt: 2 }],
    ['task', false, 3, 'ownerLostBeforeStart', { retry: false, outcome: 'Failed', why: 'retriesExhausted' }],
    ['function', false, 1, 'ownerLost', { retry: true, nextAttempt: 2 }],
    ['function', false, 2, 'attemptFailed', { retry: true, nextAttempt: 3 }],
    ['function', false, 3, 'ownerLost', { retry: false, outcome: 'Failed', why: 'retriesExhausted' }],
    ['function', false, 0, 'attemptFailed', { retry: true, nextAttempt: 2 }],
  ] as const)('%s retrySafe=%s attempt=%d %s', (mode, retrySafe, attempt, cause, expected) => {
    expect(decideRetry(mode, { maxAttempts: 3, retrySafe }, attempt, cause)).toMatchObject(expected);
  });
});

describe('decideRetry with the default policy', () => {
  it.each([
    // mode, policy, attempt, cause, expected
    ['task', undefined, 1, 'attemptFailed', { retry: false, outcome: 'Failed', why: 'retriesExhausted' }],
    ['task', { retrySafe: true }, 1, 'attemptFailed', { retry: true, nextAttempt: 2 }],
    ['task', { retrySafe: true }, 3, 'attemptFailed', { retry: false, outcome: 'Failed', why: 'retriesExhausted' }],
    ['task', undefined, 1, 'ownerLostBeforeStart', { retry: true, nextAttempt: 2 }],
    ['function', undefined, 1, 'ownerLost', { retry: true, nextAttempt: 2 }],
    ['function', undefined, 2, 'attemptFailed', { retry: true, nextAttempt: 3 }],
  ] as const)('%s %j attempt=%d %s', (mode, policy, attempt, cause, expected) => {
    expect(decideRetry(mode, policy, attempt, cause)).toMatchObject(expected);
  });
});

describe('resolveAutomaticRetryPolicy', () => {
  const annotated = (value: string): Record<string, string> => ({ 'kruntimes.io/automatic-retry': value, other: 'x' });
  it.each([
    // clusterAllows, annotations, expected
    [true, undefined, { allowed: true }],
    [true, {}, { allowed: true }],
    [true, annotated('true'), { allowed: true }],
    [true, annotated('false'), { allowed: false, refusedBy: 'namespace' }],
    // A mistyped value stays a narrowing.
    [true, annotated('no'), { allowed: false, refusedBy: 'namespace' }],
    [true, annotated(''), { allowed: false, refusedBy: 'namespace' }],
    // The namespace can never allow what the cluster forbids.
    [false, undefined, { allowed: false, refusedBy: 'cluster' }],
    [false, annotated('true'), { allowed: false, refusedBy: 'cluster' }],
    [false, annotated('false'), { allowed: false, refusedBy: 'cluster' }],
  ] as const)('cluster allows=%s, annotations %j: %j', (clusterAllows, annotations, expected) => {
    expect(resolveAutomaticRetryPolicy({ clusterAllows, namespace: 'team-a', annotations })).toMatchObject(expected);
  });

  it('says which switch refused and where it is set', () => {
    expect(resolveAutomaticRetryPolicy({ clusterAllows: false, namespace: 'team-a', annotations: undefined })).toEqual({
      allowed: false,
      refusedBy: 'cluster',
      message: 'the cluster retry policy forbids automatic retries (--automatic-retry=false, chart value global.automaticRetry)',
    });
    expect(resolveAutomaticRetryPolicy({ clusterAllows: true, namespace: 'team-a', annotations: annotated('false') })).toEqual({
      allowed: false,
      refusedBy: 'namespace',
      message: 'the namespace retry policy forbids automatic retries (annotation kruntimes.io/automatic-retry="false" on namespace team-a)',
    });
    expect(resolveAutomaticRetryPolicy({ clusterAllows: true, namespace: 'team-a', annotations: annotated('off') })).toMatchObject({
      message: expect.stringContaining('not "true" or "false", taken as "false"') as unknown,
    });
  });
});

describe('decideRetry with the organisation policy', () => {
  const forbidden: AutomaticRetryPolicy = { allowed: false, refusedBy: 'namespace', message: 'm' };
  it.each([
    // mode, retrySafe, attempt, cause, automatic, expected
    ['task', true, 1, 'ownerLost', AUTOMATIC_RETRY_ALLOWED, { retry: true, nextAttempt: 2 }],
    ['task', true, 1, 'ownerLost', forbidden, { retry: false, outcome: 'Interrupted', why: 'policyForbids', policy: forbidden }],
    // Even with no attempts left: nothing proves what the lost attempt did.
    ['task', true, 3, 'ownerLost', forbidden, { retry: false, outcome: 'Interrupted', why: 'policyForbids' }],
    // Not retrySafe is the first reason.
    ['task', false, 1, 'ownerLost', forbidden, { retry: false, outcome: 'Interrupted', why: 'notRetrySafe' }],
    // No code ran, or the code reported its own failure (the user's policy): not the organisation's switch.
    ['task', false, 1, 'ownerLostBeforeStart', forbidden, { retry: true, nextAttempt: 2 }],
    ['task', true, 1, 'attemptFailed', forbidden, { retry: true, nextAttempt: 2 }],
    // A function registration is always safe to retry.
    ['function', false, 1, 'ownerLost', forbidden, { retry: true, nextAttempt: 2 }],
  ] as const)('%s retrySafe=%s attempt=%d %s %j', (mode, retrySafe, attempt, cause, automatic, expected) => {
    expect(decideRetry(mode, { maxAttempts: 3, retrySafe }, attempt, cause, 1, automatic)).toMatchObject(expected);
  });
});

describe('retryBudgetStart', () => {
  it.each([
    ['a new Run', undefined, 1],
    ['a Run without continuation or move', {}, 1],
    ['a continuation after input', { resume: { attempt: 3 } }, 3],
    ['a function handed over twice (planned moves are not failures)', { plannedMoves: 2 }, 3],
    ['a negative count (never written so; taken as none)', { plannedMoves: -1 }, 1],
  ] as const)('%s starts at %#', (_name, status, start) => {
    expect(retryBudgetStart(status)).toBe(start);
  });

  it('gives a function that lived through moves its whole budget for failures', () => {
    // maxAttempts 2: attempts 1 and 2 were moved (plannedMoves 2), attempt 3 fails, attempt 4 fails for good.
    const start = retryBudgetStart({ plannedMoves: 2 });
    expect(decideRetry('function', { maxAttempts: 2 }, 3, 'attemptFailed', start)).toMatchObject({ retry: true, nextAttempt: 4 });
    expect(decideRetry('function', { maxAttempts: 2 }, 4, 'attemptFailed', start)).toMatchObject({ retry: false, why: 'retriesExhausted' });
  });
});
