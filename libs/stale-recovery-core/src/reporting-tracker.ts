/**
 * Remembers, per Run epoch, the Lease renewals of its owner that did not list it among
 * the Runs it holds. An owner that keeps renewing its Lease but has not listed the Run in
 * `renewals` consecutive renewals (spanning at least `minGraceMs`) stopped reporting it:
 * evidence for suspicion, never a proof. Renewals not later than the Run's last state
 * change do not count (a Run bound a moment ago is not claimed yet).
 */
export class ReportingTracker {
  readonly #renewals: number;
  readonly #minGraceMs: number;
  readonly #absent = new Map<string, { firstMs: number; lastMs: number; count: number }>();

  constructor(options: { renewals?: number; minGraceMs?: number } = {}) {
    this.#renewals = Math.max(1, options.renewals ?? 3);
    this.#minGraceMs = Math.max(0, options.minGraceMs ?? 10_000);
  }

  /**
   * One look at the owner's Lease: `renewMs` its renewTime, `held` whether it listed the
   * epoch, `sinceMs` the Run's last state change. Returns whether it stopped reporting.
   */
  observe(key: string, renewMs: number, held: boolean, sinceMs: number): boolean {
    if (held) {
      this.#absent.delete(key);
      return false;
    }
    if (!(renewMs > sinceMs)) return false;
    const entry = this.#absent.get(key);
    if (entry === undefined) {
      this.#absent.set(key, { firstMs: renewMs, lastMs: renewMs, count: 1 });
      return this.#renewals <= 1 && this.#minGraceMs === 0;
    }
    if (renewMs > entry.lastMs) {
      entry.lastMs = renewMs;
      entry.count += 1;
    }
    return entry.count >= this.#renewals && entry.lastMs - entry.firstMs >= this.#minGraceMs;
  }

  forget(key: string): void {
    this.#absent.delete(key);
  }

  /** Forgets every epoch of a Run (keys start with `<uid>/`). */
  forgetRun(uid: string): void {
    for (const key of [...this.#absent.keys()]) if (key.startsWith(`${uid}/`)) this.#absent.delete(key);
  }

  get size(): number {
    return this.#absent.size;
  }
}
