/**
 * The uids (each with the gid of the same number) a Runtime Server hands to its Runs:
 * `KRT_RUN_UIDS=FIRST-LAST`, inside the Pod's user namespace. A uid goes back to the pool
 * only once no process of it is left (`release`); one whose processes survived is
 * `retired` and never handed out again, so a survivor can never share a uid with a new Run.
 */
export interface UidRange {
  readonly first: number;
  readonly last: number;
}

/** uid 0 is the Runtime Server; the top of the 32-bit space is `(uid_t)-1`, the "no change" value. */
const LOWEST_RUN_UID = 1;
const HIGHEST_RUN_UID = 4_294_967_294;
/** More than any Pod runs at once, with room for retired uids: a bigger range only costs memory here. */
const MAX_RANGE_SIZE = 1_048_576;

/** `FIRST-LAST` (inclusive); an error that names what is wrong otherwise. */
export function parseUidRange(text: string): UidRange | Error {
  const match = /^(\d{1,10})-(\d{1,10})$/.exec(text.trim());
  if (match === null) return new Error(`KRT_RUN_UIDS must be FIRST-LAST (for example 100000-100999), not ${JSON.stringify(text)}`);
  const first = Number(match[1]);
  const last = Number(match[2]);
  if (first < LOWEST_RUN_UID || last > HIGHEST_RUN_UID) {
    return new Error(`KRT_RUN_UIDS must lie within ${String(LOWEST_RUN_UID)}-${String(HIGHEST_RUN_UID)}`);
  }
  if (last < first) return new Error(`KRT_RUN_UIDS ${text}: the last uid is below the first`);
  if (last - first + 1 > MAX_RANGE_SIZE) return new Error(`KRT_RUN_UIDS may hold at most ${String(MAX_RANGE_SIZE)} uids`);
  return { first, last };
}

/** Hands out the uids of a range, lowest free first, each to one holder at a time. */
export class UidPool {
  readonly #range: UidRange;
  /** Released uids, reused before fresh ones (a small working set keeps `ps` readable). */
  readonly #free: number[] = [];
  readonly #held = new Set<number>();
  readonly #retired = new Set<number>();
  #next: number;

  constructor(range: UidRange) {
    this.#range = range;
    this.#next = range.first;
  }

  /** A uid no one holds and no process of a previous holder runs as; undefined when none is left. */
  acquire(): number | undefined {
    const uid = this.#free.pop() ?? this.#fresh();
    if (uid !== undefined) this.#held.add(uid);
    return uid;
  }

  /** The holder's processes are all gone: the uid may go to the next Run. */
  release(uid: number): void {
    if (!this.#held.delete(uid)) throw new Error(`uid ${String(uid)} is not held`);
    this.#free.push(uid);
    // Lowest last in the array: pop() hands it out first.
    this.#free.sort((a, b) => b - a);
  }

  /** Processes of the holder survived: the uid is never handed out again. */
  retire(uid: number): void {
    if (!this.#held.delete(uid)) throw new Error(`uid ${String(uid)} is not held`);
    this.#retired.add(uid);
  }

  get held(): number {
    return this.#held.size;
  }

  get retired(): number {
    return this.#retired.size;
  }

  #fresh(): number | undefined {
    if (this.#next > this.#range.last) return undefined;
    return this.#next++;
  }
}
