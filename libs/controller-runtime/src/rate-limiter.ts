/**
 * Per-key exponential backoff for failed reconciles, as client-go's
 * ItemExponentialFailureRateLimiter: base * 2^failures, capped. `forget` resets a key
 * after a success so one bad hour does not slow the next failure forever.
 */
export interface RateLimiter {
  /** Delay before the key's next retry; counts one more failure. */
  when(key: string): number;
  forget(key: string): void;
  failures(key: string): number;
}

export interface ExponentialBackoffOptions {
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_BACKOFF: ExponentialBackoffOptions = { baseDelayMs: 5, maxDelayMs: 5 * 60 * 1000 };

export function exponentialFailureRateLimiter(options: ExponentialBackoffOptions = DEFAULT_BACKOFF): RateLimiter {
  const failures = new Map<string, number>();
  return {
    when(key) {
      const count = failures.get(key) ?? 0;
      failures.set(key, count + 1);
      // 2^count overflows to Infinity past ~1024; the cap keeps the result finite.
      return Math.min(options.baseDelayMs * 2 ** count, options.maxDelayMs);
    },
    forget(key) {
      failures.delete(key);
    },
    failures(key) {
      return failures.get(key) ?? 0;
    },
  };
}
