/**
 * A Map that keeps at most `capacity` entries and drops the least recently set one
 * beyond it: for the bookkeeping a long-running controller keeps per object it has seen
 * (confirmed releases, report numbers, Lease observations), which must not grow with
 * every object that ever passed through.
 */
export class RecencyBoundedMap<K, V> {
  readonly #capacity: number;
  /** Insertion order is set order: the first key is the least recently set. */
  readonly #entries = new Map<K, V>();

  constructor(capacity: number) {
    this.#capacity = Math.max(0, capacity);
  }

  get(key: K): V | undefined {
    return this.#entries.get(key);
  }

  /** Sets `key` as the most recent entry, then drops the oldest beyond the capacity. */
  set(key: K, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.#capacity) break;
      this.#entries.delete(oldest);
    }
  }

  delete(key: K): void {
    this.#entries.delete(key);
  }

  /** Oldest first. */
  values(): V[] {
    return [...this.#entries.values()];
  }

  get size(): number {
    return this.#entries.size;
  }
}
