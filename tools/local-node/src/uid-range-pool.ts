import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tryLockFile } from './address-pool.ts';
import { LocalNodeError } from './errors.ts';
import { RANGE_COUNT, chooseRangeIndex, rangeBase } from './user-namespace.ts';

/**
 * Hands out one host uid/gid range of 65536 per Pod with `hostUsers: false`, unique among
 * the live Pods of every agent on this host (one per jest worker, a local cluster beside a
 * test run): each range held is also a lock file `<lockDir>/<base>` (see AddressPool). A
 * range is released only once no process of its Pod is left.
 */
export class UidRangePool {
  readonly #lockDir: string;
  readonly #held = new Map<number, number>();
  #cursor: number;

  constructor(lockDir: string, options: { start?: number } = {}) {
    this.#lockDir = lockDir;
    // Only the agents (root) may take or free a range.
    mkdirSync(lockDir, { recursive: true, mode: 0o700 });
    this.#cursor = options.start ?? process.pid % RANGE_COUNT;
  }

  /** The base (host id of the Pod's uid 0) of a range held by no other Pod. */
  allocate(): number {
    const tried = new Set(this.#held.keys());
    for (;;) {
      const index = chooseRangeIndex(tried, this.#cursor);
      if (index === undefined) throw new LocalNodeError(`all ${String(RANGE_COUNT)} uid ranges are held by Pods on this host`);
      tried.add(index);
      const base = rangeBase(index);
      if (tryLockFile(join(this.#lockDir, String(base)))) {
        this.#held.set(index, base);
        this.#cursor = index + 1;
        return base;
      }
    }
  }

  release(base: number): void {
    for (const [index, held] of this.#held) {
      if (held !== base) continue;
      this.#held.delete(index);
      rmSync(join(this.#lockDir, String(base)), { force: true });
    }
  }
}
