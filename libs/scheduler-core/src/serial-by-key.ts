/** Runs the tasks of one key one after another, in call order; tasks of different keys run concurrently. */
export class SerialByKey {
  /** The last task of each key, its failure swallowed: a failed task does not stop the next. */
  readonly #tails = new Map<string, Promise<void>>();

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const result = previous.then(task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(key, tail);
    try {
      return await result;
    } finally {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }

  /** Keys with a task running or waiting. */
  get size(): number {
    return this.#tails.size;
  }
}
