import { setTimeout as sleep } from 'node:timers/promises';
import { WaitTimeoutError } from './errors.ts';

export interface WaitOptions {
  /** Upper bound on the whole wait, including the last probe. */
  timeoutMs: number;
  /** Pause between probes. */
  intervalMs?: number;
  /** Upper bound on the number of probes; defaults to what fits into timeoutMs. */
  maxAttempts?: number;
  /** Stops the wait early (e.g. the process being waited on exited). */
  signal?: AbortSignal;
}

/**
 * Polls `probe` until it returns a value other than `undefined`, bounded in both time and
 * attempts. A probe that throws counts as "not yet"; its error is reported if the wait
 * times out, so a refused connection or a 403 is visible in the failure.
 */
export async function waitFor<T>(description: string, probe: () => Promise<T | undefined>, options: WaitOptions): Promise<T> {
  const intervalMs = options.intervalMs ?? 100;
  const maxAttempts = options.maxAttempts ?? Math.ceil(options.timeoutMs / Math.max(intervalMs, 1)) + 1;
  const started = performance.now();
  let lastError: unknown;
  let attempts = 0;
  while (attempts < maxAttempts) {
    options.signal?.throwIfAborted();
    attempts += 1;
    try {
      const value = await probe();
      if (value !== undefined) return value;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    const remaining = options.timeoutMs - (performance.now() - started);
    if (remaining <= 0) break;
    await sleep(Math.min(intervalMs, remaining), undefined, options.signal === undefined ? {} : { signal: options.signal });
  }
  throw new WaitTimeoutError(description, attempts, Math.round(performance.now() - started), lastError);
}
