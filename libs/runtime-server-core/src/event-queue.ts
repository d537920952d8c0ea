/**
 * A single-consumer async queue with a high-water mark. Producers are loops reading
 * child-process pipes: they `await ready()` before reading on, so when the consumer (a
 * gRPC stream to runtimed) is slower than the process writes, the pipe fills and the
 * process itself waits, instead of the server buffering without bound.
 */
export class EventQueue<T> {
  readonly #items: T[] = [];
  readonly #highWater: number;
  #consumer: (() => void) | undefined;
  readonly #producers: (() => void)[] = [];
  #closed = false;

  constructor(highWater: number) {
    this.#highWater = highWater;
  }

  push(item: T): void {
    if (this.#closed) return;
    this.#items.push(item);
    const consumer = this.#consumer;
    this.#consumer = undefined;
    consumer?.();
  }

  /** Resolves once the queue is below its high-water mark (or closed). */
  ready(): Promise<void> {
    if (this.#closed || this.#items.length < this.#highWater) return Promise.resolve();
    return new Promise((resolve) => this.#producers.push(resolve));
  }

  /** No more items; the consumer drains what is queued and ends. */
  close(): void {
    this.#closed = true;
    const consumer = this.#consumer;
    this.#consumer = undefined;
    consumer?.();
    this.#releaseProducers();
  }

  async *drain(): AsyncGenerator<T> {
    for (;;) {
      const item = this.#items.shift();
      if (item !== undefined) {
        if (this.#items.length < this.#highWater) this.#releaseProducers();
        yield item;
        continue;
      }
      if (this.#closed) return;
      await new Promise<void>((resolve) => {
        this.#consumer = resolve;
      });
    }
  }

  #releaseProducers(): void {
    for (const resolve of this.#producers.splice(0)) resolve();
  }
}
