import { BOUNDS, DEFAULTS } from '@kruntimes/api';
import type { RetryPolicy, RunModeKind } from '@kruntimes/api';

/** Why an attempt ended without finishing the Run. */
export type AttemptFailureCause =
  /** The code ran and failed (non-zero exit, registration error): the user's policy decides. */
  | 'attemptFailed'
  /** The owner was lost and fenced; nothing is known about what the code did. */
  | 'ownerLost'
  /** The owner was lost before it claimed the Run: no code ran. */
  | 'ownerLostBeforeStart';

export type RetryDecision =
  | { retry: true; nextAttempt: number; backoffSeconds: number }
  | { retry: false; outcome: 'Failed' | 'Interrupted'; why: 'retriesExhausted' | 'notRetrySafe' };

export interface ResolvedRetryPolicy {
  maxAttempts: number;
  initialBackoffSeconds: number;
  maxBackoffSeconds: number;
  retrySafe: boolean;
}

export function resolveRetryPolicy(policy: RetryPolicy | undefined): ResolvedRetryPolicy {
  const maxAttempts = Math.min(Math.max(policy?.maxAttempts ?? DEFAULTS.maxAttempts, 1), BOUNDS.maxAttempts);
  const maxBackoffSeconds = Math.min(policy?.maxBackoffSeconds ?? DEFAULTS.maxBackoffSeconds, BOUNDS.maxBackoffSeconds);
  const initialBackoffSeconds = Math.min(policy?.initialBackoffSeconds ?? DEFAULTS.initialBackoffSeconds, maxBackoffSeconds);
  return { maxAttempts, initialBackoffSeconds, maxBackoffSeconds, retrySafe: policy?.retrySafe ?? false };
}

/** Exponential backoff before attempt `nextAttempt` (2, 3, ...), capped. */
export function backoffSeconds(policy: ResolvedRetryPolicy, nextAttempt: number): number {
  const exponent = Math.max(nextAttempt - 2, 0);
  return Math.min(policy.initialBackoffSeconds * 2 ** exponent, policy.maxBackoffSeconds);
}

/**
 * The shared retry engine used by runtimed (its own failed attempt) and stale-recovery
 * (a fenced, lost owner). Function registration is always safe to retry; a task that
 * lost its owner after it started is retried only when it declared `retrySafe`, since
 * the platform cannot prove whether its side effects happened.
 */
export function decideRetry(
  mode: RunModeKind,
  policy: RetryPolicy | undefined,
  currentAttempt: number,
  cause: AttemptFailureCause,
): RetryDecision {
  const resolved = resolveRetryPolicy(policy);
  const safe = mode === 'function' || cause !== 'ownerLost' || resolved.retrySafe;
  if (!safe) return { retry: false, outcome: 'Interrupted', why: 'notRetrySafe' };
  const nextAttempt = Math.max(currentAttempt, 1) + 1;
  if (nextAttempt > resolved.maxAttempts) return { retry: false, outcome: 'Failed', why: 'retriesExhausted' };
  return { retry: true, nextAttempt, backoffSeconds: backoffSeconds(resolved, nextAttempt) };
}
