import { BOUNDS, DEFAULTS, NAMESPACE_AUTOMATIC_RETRY_ANNOTATION } from '@kruntimes/api';
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
  | { retry: false; outcome: 'Failed' | 'Interrupted'; why: 'retriesExhausted' | 'notRetrySafe' }
  /** The organisation's policy forbids the automatic retry of a lost task; `policy` says where. */
  | { retry: false; outcome: 'Interrupted'; why: 'policyForbids'; policy: AutomaticRetryForbidden };

/**
 * The organisation's retry policy (docs/operations.md "Retry policy"): whether a task that
 * lost its owner (or whose attempt the platform cut short) may be retried automatically,
 * and, when not, which of the two switches refused.
 */
export type AutomaticRetryPolicy = { allowed: true } | AutomaticRetryForbidden;
export interface AutomaticRetryForbidden {
  allowed: false;
  refusedBy: 'cluster' | 'namespace';
  /** Says which switch refused and where it is set, for the Run's status message. */
  message: string;
}

export const AUTOMATIC_RETRY_ALLOWED: AutomaticRetryPolicy = { allowed: true };

/**
 * The effective policy for one namespace: the cluster default (the components' flag
 * `--automatic-retry`, chart value `retry.automatic`) narrowed by the namespace's
 * annotation `kruntimes.io/automatic-retry`. The annotation can forbid what the cluster
 * allows, never allow what it forbids; any value but "true" or "false" forbids too (a
 * mistyped narrowing is kept a narrowing).
 */
export function resolveAutomaticRetryPolicy(input: {
  clusterAllows: boolean;
  namespace: string;
  annotations: Readonly<Record<string, string>> | undefined;
}): AutomaticRetryPolicy {
  if (!input.clusterAllows) {
    return {
      allowed: false,
      refusedBy: 'cluster',
      message: 'the cluster retry policy forbids automatic retries (--automatic-retry=false, chart value global.automaticRetry)',
    };
  }
  const value = input.annotations?.[NAMESPACE_AUTOMATIC_RETRY_ANNOTATION];
  if (value === undefined || value === 'true') return AUTOMATIC_RETRY_ALLOWED;
  const where = `annotation ${NAMESPACE_AUTOMATIC_RETRY_ANNOTATION}=${JSON.stringify(value)} on namespace ${input.namespace}`;
  return {
    allowed: false,
    refusedBy: 'namespace',
    message:
      value === 'false'
        ? `the namespace retry policy forbids automatic retries (${where})`
        : `the namespace retry policy forbids automatic retries (${where}: not "true" or "false", taken as "false")`,
  };
}

export interface ResolvedRetryPolicy {
  maxAttempts: number;
  initialBackoffSeconds: number;
  maxBackoffSeconds: number;
  retrySafe: boolean;
}

/**
 * The policy with its defaults and bounds. A task that is not retrySafe runs once: its
 * default is 1 attempt, and a larger maxAttempts (refused by the CRD, but possible on a
 * Run stored before that rule) is ignored.
 */
export function resolveRetryPolicy(mode: RunModeKind, policy: RetryPolicy | undefined): ResolvedRetryPolicy {
  const retrySafe = policy?.retrySafe ?? false;
  const runsOnce = mode === 'task' && !retrySafe;
  const requested = runsOnce ? DEFAULTS.notRetrySafeTaskMaxAttempts : (policy?.maxAttempts ?? DEFAULTS.maxAttempts);
  const maxAttempts = Math.min(Math.max(requested, 1), BOUNDS.maxAttempts);
  const maxBackoffSeconds = Math.min(policy?.maxBackoffSeconds ?? DEFAULTS.maxBackoffSeconds, BOUNDS.maxBackoffSeconds);
  const initialBackoffSeconds = Math.min(policy?.initialBackoffSeconds ?? DEFAULTS.initialBackoffSeconds, maxBackoffSeconds);
  return { maxAttempts, initialBackoffSeconds, maxBackoffSeconds, retrySafe };
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
 * the platform cannot prove whether its side effects happened, and a task that is not
 * retrySafe and failed runs no second time. An attempt whose owner was lost before it
 * claimed the Run ran no code: it is retried within the default budget of retry-safe
 * work even for a task that runs once (it still runs at most once). `firstAttempt` is
 * where the current budget starts (retryBudgetStart). A retrySafe task that lost its
 * owner is retried automatically only when the organisation's policy (`automatic`,
 * resolveAutomaticRetryPolicy) allows it too; otherwise it ends Interrupted and the user
 * retries it explicitly (`krt retry`, after its warning).
 */
export function decideRetry(
  mode: RunModeKind,
  policy: RetryPolicy | undefined,
  currentAttempt: number,
  cause: AttemptFailureCause,
  firstAttempt = 1,
  automatic: AutomaticRetryPolicy = AUTOMATIC_RETRY_ALLOWED,
): RetryDecision {
  const resolved = resolveRetryPolicy(mode, policy);
  const safe = mode === 'function' || cause !== 'ownerLost' || resolved.retrySafe;
  if (!safe) return { retry: false, outcome: 'Interrupted', why: 'notRetrySafe' };
  // Only where side effects may repeat: a function registration, an attempt that ran no
  // code, and the user's own retry policy after a reported failure are not the platform's guess.
  if (mode === 'task' && cause === 'ownerLost' && !automatic.allowed) {
    return { retry: false, outcome: 'Interrupted', why: 'policyForbids', policy: automatic };
  }
  // A continuation after input (status.resume) starts a fresh budget at its first
  // attempt: answering a wait is not a retry, and the Run's attempts keep counting up.
  const offset = Math.max(firstAttempt, 1) - 1;
  const relativeNext = Math.max(currentAttempt - offset, 1) + 1;
  const budget = cause === 'ownerLostBeforeStart' ? Math.max(resolved.maxAttempts, DEFAULTS.maxAttempts) : resolved.maxAttempts;
  if (relativeNext > budget) return { retry: false, outcome: 'Failed', why: 'retriesExhausted' };
  return { retry: true, nextAttempt: relativeNext + offset, backoffSeconds: backoffSeconds(resolved, relativeNext) };
}

/**
 * The first attempt of the Run's current retry budget: its continuation's, or 1, moved on
 * by every planned move (status.plannedMoves: a function handed over by a stopping Pod),
 * so that only attempts that failed count against maxAttempts. The two never mix: only a
 * task continues after input, and only a function is handed over.
 */
export function retryBudgetStart(status: { resume?: { attempt: number }; plannedMoves?: number } | undefined): number {
  return (status?.resume?.attempt ?? 1) + Math.max(status?.plannedMoves ?? 0, 0);
}
