/** Keys remembered before expired entries are pruned. */
const PRUNE_AT = 1_024;

/**
 * At most one `allow` per key per interval; memory stays bounded by pruning expired keys
 * (live keys are those allowed within the last interval, which a burst cannot grow much).
 */
export class PerKeyInterval {
  readonly #intervalMs: number;
  readonly #last = new Map<string, number>();

  constructor(intervalMs: number) {
    this.#intervalMs = intervalMs;
  }

  allow(key: string, nowMs: number): boolean {
    const last = this.#last.get(key);
    if (last !== undefined && nowMs - last < this.#intervalMs) return false;
    this.#last.set(key, nowMs);
    if (this.#last.size > PRUNE_AT) {
      for (const [other, at] of this.#last) if (nowMs - at >= this.#intervalMs) this.#last.delete(other);
    }
    return true;
  }

  get size(): number {
    return this.#last.size;
  }
}
