import { KruntimesError } from '@kruntimes/errors';
import { WorkQueue } from './work-queue.ts';

export interface ReconcileResult {
  /** Reconcile this key again after this long, even if nothing changes. */
  requeueAfterMs?: number;
}

/**
 * Reconciles one object key (`namespace/name`). Idempotent: it reads the current state
 * and converges; it never depends on which event caused the call. Throwing requeues the
 * key with rate-limited backoff, unless the error is a terminal KruntimesError.
 */
export type Reconciler = (key: string, signal: AbortSignal) => Promise<ReconcileResult | undefined>;

/** The slice of a pino logger a controller needs. */
export interface ControllerLogger {
  error(object: object, message: string): void;
  debug(object: object, message: string): void;
}

export interface ControllerOptions {
  name: string;
  reconcile: Reconciler;
  logger: ControllerLogger;
  /** Concurrent workers; one key never runs on two at once. */
  workers?: number;
  queue?: WorkQueue;
}

/** Runs workers that take keys from one shared work queue and reconcile them. */
export class Controller {
  readonly name: string;
  readonly queue: WorkQueue;
  readonly #reconcile: Reconciler;
  readonly #logger: ControllerLogger;
  readonly #workers: number;
  readonly #abort = new AbortController();
  #running: Promise<void>[] = [];

  constructor(options: ControllerOptions) {
    this.name = options.name;
    this.queue = options.queue ?? new WorkQueue();
    this.#reconcile = options.reconcile;
    this.#logger = options.logger;
    this.#workers = Math.max(1, options.workers ?? 1);
  }

  enqueue(key: string): void {
    this.queue.add(key);
  }

  start(): void {
    if (this.#running.length > 0) return;
    this.#running = Array.from({ length: this.#workers }, () => this.#work());
  }

  /** Stops taking keys, aborts in-flight reconciles' signal, and waits for the workers. */
  async stop(): Promise<void> {
    this.queue.shutDown();
    this.#abort.abort();
    await Promise.all(this.#running);
    this.#running = [];
  }

  async #work(): Promise<void> {
    for (let key = await this.queue.get(); key !== undefined; key = await this.queue.get()) {
      await this.#processOne(key);
    }
  }

  async #processOne(key: string): Promise<void> {
    try {
      const result = await this.#reconcile(key, this.#abort.signal);
      this.queue.forget(key);
      if (result?.requeueAfterMs !== undefined) this.queue.addAfter(key, result.requeueAfterMs);
    } catch (error: unknown) {
      if (error instanceof KruntimesError && error.terminal) {
        this.queue.forget(key);
        this.#logger.error({ controller: this.name, key, err: error, code: error.code }, 'reconcile failed terminally; not requeued');
      } else {
        this.#logger.error(
          { controller: this.name, key, err: error, failures: this.queue.failures(key) + 1 },
          'reconcile failed; requeued with backoff',
        );
        this.queue.addRateLimited(key);
      }
    } finally {
      this.queue.done(key);
    }
  }
}
