/** Crash-loop back-off, as the kubelet does it: 10 s doubling to 5 min. */
export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
}

export const KUBELET_BACKOFF: BackoffOptions = { initialMs: 10_000, maxMs: 300_000 };

/**
 * Delay before restart number `consecutiveFailures` (1 = first restart after a crash).
 * The kubelet waits even before the first restart, so a container that exits at once
 * cannot spin.
 */
export function backoffDelayMs(options: BackoffOptions, consecutiveFailures: number): number {
  const exponent = Math.max(0, consecutiveFailures - 1);
  // 2^exponent overflows to Infinity long before it matters; min() caps it.
  return Math.min(options.maxMs, options.initialMs * 2 ** Math.min(exponent, 52));
}

/**
 * The kubelet forgets a container's back-off once it has run for twice the maximum
 * back-off without crashing; after that the next crash starts again at the initial delay.
 */
export function backoffResets(options: BackoffOptions, ranForMs: number): boolean {
  return ranForMs >= 2 * options.maxMs;
}
