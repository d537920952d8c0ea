/**
 * Binds this scheduler wrote (or may have written) that its informer cache does not
 * show yet, as kube-scheduler's assumed Pods: without it, the next placement pass
 * would see the Run still Pending and its Pod's unit still free, and over-commit.
 *
 * An assumption is keyed by Run UID and remembers the resourceVersion the bind was
 * fenced on. Because the write carried that resourceVersion, any *other* version of
 * the Run in the cache is at or after the write, so the cache itself tells the truth
 * from then on and the assumption is dropped (no comparison of resourceVersions, which
 * are opaque). A definite refusal (4xx) forgets it at once.
 *
 * A write whose outcome is unknown (timeout, connection reset) stays assumed, but only
 * for `uncertainTtlMs`: if the write did happen, the watch shows it long before; if it
 * did not, the Run must not stay skipped forever with its unit held. Expiring it is
 * safe for the Run: the next bind is fenced on the same resourceVersion, so had the
 * first write landed after all, the second one gets 409 instead of binding twice.
 */
export class AssumeCache {
  readonly #entries = new Map<string, { group: string; podUID: string; fencedOn: string; expiresAtMs: number | undefined }>();

  /** `group` is the placement unit (the Runtime's key) whose passes must count it. */
  assume(group: string, runUID: string, podUID: string, fencedOnResourceVersion: string): void {
    this.#entries.set(runUID, { group, podUID, fencedOn: fencedOnResourceVersion, expiresAtMs: undefined });
  }

  /** The write's outcome is unknown: keep the assumption until `expiresAtMs` at most. */
  uncertain(runUID: string, expiresAtMs: number): void {
    const entry = this.#entries.get(runUID);
    if (entry !== undefined) entry.expiresAtMs = expiresAtMs;
  }

  /** The write was refused (409, 422, 404): it never happened. */
  forget(runUID: string): void {
    this.#entries.delete(runUID);
  }

  /** Called for every informer add/update: a newer version than the fenced one settles it. */
  observe(runUID: string, resourceVersion: string | undefined): void {
    const entry = this.#entries.get(runUID);
    if (entry !== undefined && resourceVersion !== entry.fencedOn) this.#entries.delete(runUID);
  }

  /** Called for an informer delete. */
  deleted(runUID: string): void {
    this.#entries.delete(runUID);
  }

  /**
   * The group's assumptions the cache has not caught up with (Run UID -> Pod UID), and
   * when the earliest uncertain one expires (the pass must look again then).
   * `cachedVersion` gives the cache's current resourceVersion of a Run (undefined: not
   * in the cache).
   */
  snapshot(
    group: string,
    cachedVersion: (runUID: string) => string | undefined,
    nowMs: number,
  ): { assumed: Map<string, string>; nextExpiryMs: number | undefined } {
    const assumed = new Map<string, string>();
    let nextExpiryMs: number | undefined;
    for (const [runUID, entry] of this.#entries) {
      if (entry.group !== group) continue;
      const version = cachedVersion(runUID);
      // Gone from the cache, moved past the write, or uncertain for too long: the cache is the truth now.
      if (version !== entry.fencedOn || (entry.expiresAtMs !== undefined && entry.expiresAtMs <= nowMs)) {
        this.#entries.delete(runUID);
        continue;
      }
      assumed.set(runUID, entry.podUID);
      if (entry.expiresAtMs !== undefined) nextExpiryMs = Math.min(nextExpiryMs ?? entry.expiresAtMs, entry.expiresAtMs);
    }
    return { assumed, nextExpiryMs };
  }

  /** Whether a bind of this Run is assumed, in any group (a namespace's run slots count every Runtime's). */
  has(runUID: string): boolean {
    return this.#entries.has(runUID);
  }

  /** The Runs assumed bound in a namespace's Runtimes (groups `namespace/name`). */
  inNamespace(namespace: string): string[] {
    const prefix = `${namespace}/`;
    return [...this.#entries].filter(([, entry]) => entry.group.startsWith(prefix)).map(([runUID]) => runUID);
  }

  get size(): number {
    return this.#entries.size;
  }
}
