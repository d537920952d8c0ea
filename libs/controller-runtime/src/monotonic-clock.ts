/**
 * Time for code that measures how long something took or waits for a while. Monotonic:
 * a wall clock stepped by NTP must neither expire a Lease early nor keep it alive.
 * Injected so that tests control it.
 */
export interface MonotonicClock {
  /** Milliseconds from an arbitrary origin; only differences mean anything. */
  now(): number;
  /** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
}

export const systemMonotonicClock: MonotonicClock = {
  now: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal.aborted) {
        resolve();
        return;
      }
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
    }),
};
