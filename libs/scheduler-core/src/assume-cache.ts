/**
 * Binds this scheduler wrote (or may have written) that its informer cache does not
 * show yet, as kube-scheduler's assumed Pods: without it, the next placement pass
 * would see the Run still Pending and its Pod's unit still free, and over-commit.
 *
 * An assumption is keyed by Run UID and remembers the resourceVersion the bind was
 * fenced on. Because the write carried that resourceVersion, any *other* version of
 * the Run in the cache is at or after the write, so the cache itself tells the truth
 * from then on and the assumption is dropped: no TTL, no comparison of resourceVersions
 * (which are opaque). A write whose outcome is unknown (timeout, connection reset) is
 * kept assumed for the same reason; only a definite refusal forgets it.
 */
export class AssumeCache {
  readonly #entries = new Map<string, { group: string; podUID: string; fencedOn: string }>();

  /** `group` is the placement unit (the Runtime's key) whose passes must count it. */
  assume(group: string, runUID: string, podUID: string, fencedOnResourceVersion: string): void {
    this.#entries.set(runUID, { group, podUID, fencedOn: fencedOnResourceVersion });
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
   * Run UID -> Pod UID of the group's assumptions the cache has not caught up with. `cachedVersion`
   * gives the cache's current resourceVersion of a Run (undefined: not in the cache).
   */
  snapshot(group: string, cachedVersion: (runUID: string) => string | undefined): Map<string, string> {
    const result = new Map<string, string>();
    for (const [runUID, entry] of this.#entries) {
      if (entry.group !== group) continue;
      const version = cachedVersion(runUID);
      if (version === entry.fencedOn) result.set(runUID, entry.podUID);
      // Gone from the cache, or the cache moved past the write: the cache is the truth now.
      else this.#entries.delete(runUID);
    }
    return result;
  }

  get size(): number {
    return this.#entries.size;
  }
}
