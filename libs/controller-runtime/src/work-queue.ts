import { exponentialFailureRateLimiter } from './rate-limiter.ts';
import type { RateLimiter } from './rate-limiter.ts';

/**
 * A work queue with client-go's guarantees:
 * - a key waiting in the queue is held once, however often it is added (de-duplication);
 * - a key is handed to at most one worker at a time: added while it is being processed,
 *   it is queued again only when that worker calls `done`;
 * - delayed adds (`addAfter`, `addRateLimited`) keep only the earliest pending deadline.
 */
export class WorkQueue {
  readonly #queue: string[] = [];
  /** Keys that need processing: queued, or re-added while processing. */
  readonly #dirty = new Set<string>();
  readonly #processing = new Set<string>();
  readonly #waiting = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  readonly #getters: ((key: string | undefined) => void)[] = [];
  readonly #rateLimiter: RateLimiter;
  #shuttingDown = false;

  constructor(rateLimiter: RateLimiter = exponentialFailureRateLimiter()) {
    this.#rateLimiter = rateLimiter;
  }

  add(key: string): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#dirty.add(key);
    if (this.#processing.has(key)) return; // re-queued by done()
    this.#enqueue(key);
  }

  addAfter(key: string, delayMs: number): void {
    if (this.#shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + delayMs;
    const pending = this.#waiting.get(key);
    if (pending !== undefined && pending.at <= at) return;
    if (pending !== undefined) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.#waiting.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.#waiting.set(key, { at, timer });
  }

  /** Requeue after a failure, with the rate limiter's per-key backoff. */
  addRateLimited(key: string): void {
    this.addAfter(key, this.#rateLimiter.when(key));
  }

  /** Clear a key's failure history after it reconciled successfully. */
  forget(key: string): void {
    this.#rateLimiter.forget(key);
  }

  failures(key: string): number {
    return this.#rateLimiter.failures(key);
  }

  /** The next key to process, or undefined once the queue is shut down. */
  async get(): Promise<string | undefined> {
    const key = this.#queue.shift();
    if (key !== undefined) return this.#startProcessing(key);
    if (this.#shuttingDown) return undefined;
    const next = await new Promise<string | undefined>((resolve) => this.#getters.push(resolve));
    return next === undefined ? undefined : this.#startProcessing(next);
  }

  /** The worker finished with `key`; if it was added meanwhile, queue it again. */
  done(key: string): void {
    this.#processing.delete(key);
    if (this.#dirty.has(key) && !this.#shuttingDown) this.#enqueue(key);
  }

  get length(): number {
    return this.#queue.length;
  }

  get isShuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Stops handing out keys; waiting `get` calls resolve undefined; timers are cleared. */
  shutDown(): void {
    this.#shuttingDown = true;
    for (const { timer } of this.#waiting.values()) clearTimeout(timer);
    this.#waiting.clear();
    this.#queue.length = 0;
    for (const resolve of this.#getters.splice(0)) resolve(undefined);
  }

  #enqueue(key: string): void {
    const getter = this.#getters.shift();
    if (getter === undefined) this.#queue.push(key);
    else getter(key);
  }

  #startProcessing(key: string): string {
    this.#dirty.delete(key);
    this.#processing.add(key);
    return key;
  }
}
