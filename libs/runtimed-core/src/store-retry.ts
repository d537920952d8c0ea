import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';

/** Waits between reads of an ArtifactStore that cannot be read (a transient outage outlives a few seconds). */
export const DEFAULT_STORE_RETRY_DELAYS_MS: readonly number[] = [2_000, 6_000, 12_000];

/** The store stayed unreadable through every try: `tries` reads failed, the last with `cause`. */
export class StoreUnreadableError extends Error {
  readonly tries: number;

  constructor(tries: number, cause: unknown) {
    super(`${String(tries)} tries: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'StoreUnreadableError';
    this.tries = tries;
  }
}

/**
 * Runs `read` and, while it throws, again after each of `delaysMs` (stopping early once
 * `signal` aborts). What `read` returns is the answer, whatever it says: only a store
 * that cannot be read is retried. Throws StoreUnreadableError after the last try.
 */
export async function readStoreRetrying<T>(
  read: () => Promise<T>,
  options: { delaysMs: readonly number[]; log: Logger; what: string; signal?: AbortSignal },
): Promise<T> {
  const { delaysMs, log, what, signal } = options;
  for (let pass = 0; ; pass += 1) {
    try {
      return await read();
    } catch (error) {
      const delay = delaysMs[pass];
      if (delay === undefined || signal?.aborted === true) throw new StoreUnreadableError(pass + 1, error);
      log.warn({ err: error, pass: pass + 1, retryInMs: delay }, `the artifact store could not be read; ${what} again`);
      await sleep(delay, undefined, signal === undefined ? {} : { signal }).catch(() => undefined);
    }
  }
}
