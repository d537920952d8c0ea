/**
 * Remembers, per Run epoch, the Lease renewals of its owner that did not list it among
 * the Runs it holds. An owner that keeps renewing its Lease but has not listed the Run in
 * `renewals` consecutive renewals (spanning at least `minGraceMs`) stopped reporting it:
 * evidence for suspicion, never a proof. Renewals not later than the Run's last state
 * change do not count (a Run bound a moment ago is not claimed yet).
 *
 * Every time here is when this process saw something, on its own monotonic clock (a
 * renewal: when it first saw that Lease version; the Run's change: `runChangeSeenAt`),
 * never a time another machine wrote: the Pod's renewTime and the Run's condition times
 * come from different clocks and are never compared.
 */
export class ReportingTracker {
  readonly #renewals: number;
  readonly #minGraceMs: number;
  readonly #absent = new Map<string, { firstMs: number; lastMs: number; count: number }>();
  /** Per epoch: the Run's last state change (an identity only) and when this process first saw it. */
  readonly #runChanges = new Map<string, { change: number; seenMs: number }>();

  constructor(options: { renewals?: number; minGraceMs?: number } = {}) {
    this.#renewals = Math.max(1, options.renewals ?? 3);
    this.#minGraceMs = Math.max(0, options.minGraceMs ?? 10_000);
  }

  /**
   * When this process first saw the Run's current state: `change` identifies that state
   * (the Run's last change as written; compared only for equality), `nowMs` is now on the
   * monotonic clock. Pass the result to `observe` as `sinceMs`.
   */
  runChangeSeenAt(key: string, change: number, nowMs: number): number {
    const seen = this.#runChanges.get(key);
    if (seen?.change === change) return seen.seenMs;
    this.#runChanges.set(key, { change, seenMs: nowMs });
    return nowMs;
  }

  /**
   * One look at the owner's Lease: `renewMs` when this process first saw that renewal (its
   * Lease version), `held` whether it listed the epoch, `sinceMs` when it first saw the
   * Run's last state change (`runChangeSeenAt`), both on the monotonic clock. Returns
   * whether it stopped reporting.
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
    this.#runChanges.delete(key);
  }

  /** Forgets every epoch of a Run (keys start with `<uid>/`). */
  forgetRun(uid: string): void {
    for (const key of [...this.#absent.keys()]) if (key.startsWith(`${uid}/`)) this.#absent.delete(key);
    for (const key of [...this.#runChanges.keys()]) if (key.startsWith(`${uid}/`)) this.#runChanges.delete(key);
  }

  get size(): number {
    return this.#absent.size;
  }
}
