import type { ReadonlyDeep } from './object-key.ts';

/** The values an object is filed under in one index (client-go's IndexFunc); none leaves it out. */
export type IndexFunction<T, K extends string = string> = (object: T) => readonly K[];

/**
 * A named index of a cache of T whose values are of K: byIndex and countByIndex take it
 * only on a cache of T, and a value only of K (e.g. `${runtime}|held`, not a typo of it).
 */
export interface InformerIndex<T, K extends string = string> {
  readonly name: string;
  readonly valuesOf: IndexFunction<ReadonlyDeep<T>, K>;
}

/** An index of a cache of T (see InformerIndex). */
export function informerIndex<T, K extends string = string>(
  name: string,
  valuesOf: IndexFunction<ReadonlyDeep<T>, K>,
): InformerIndex<T, K> {
  return { name, valuesOf };
}

/**
 * What a cache needs of an object of any kind: where it keeps it (name, namespace) and
 * which version it is. Every Kubernetes object has it, whatever its other types say
 * (client-node's Date timestamps, or the strings of JSON as @kruntimes/api types them).
 */
export interface CachedObject {
  readonly metadata?: { readonly name?: string; readonly namespace?: string; readonly uid?: string; readonly resourceVersion?: string };
}

interface Index<T> {
  valuesOf: IndexFunction<T>;
  /** Index value -> object key -> object. */
  byValue: Map<string, Map<string, T>>;
}

/**
 * Secondary indexes over a cache (client-go's Indexer): a controller reads the objects
 * filed under one value, e.g. the Pending Runs of one Runtime, without scanning the cache.
 * Kept up to date by the informer's own add, update and delete events, before any
 * handler of a controller sees the event.
 */
export class InformerIndexes<T extends CachedObject> {
  readonly #indexes = new Map<string, Index<T>>();
  /**
   * Object key -> the version last filed: where to take it out of again (its values are
   * computed anew, index functions being pure). One reference per object, not a copy of
   * its values: the indexes of a cache of tens of thousands cost little beside it.
   */
  readonly #filed = new Map<string, T>();

  /**
   * The same name adds one index: shared caches are shared by components that ask alike.
   * An index added to a cache already filled files what it holds at once.
   */
  add(name: string, valuesOf: IndexFunction<T>): void {
    if (this.#indexes.has(name)) return;
    const index: Index<T> = { valuesOf, byValue: new Map() };
    this.#indexes.set(name, index);
    for (const [key, object] of this.#filed) file(index, key, object);
  }

  get size(): number {
    return this.#indexes.size;
  }

  /** The objects filed under `value`; an unknown index is a programming error. */
  get(name: string, value: string): T[] {
    const index = this.#indexes.get(name);
    if (index === undefined) throw new RangeError(`no index ${name}`);
    const objects = index.byValue.get(value);
    return objects === undefined ? [] : [...objects.values()];
  }

  /** How many objects are filed under `value`. */
  count(name: string, value: string): number {
    return this.#indexes.get(name)?.byValue.get(value)?.size ?? 0;
  }

  upsert(object: T): void {
    const key = cacheKey(object);
    this.#remove(key);
    this.#filed.set(key, object);
    for (const index of this.#indexes.values()) file(index, key, object);
  }

  delete(object: T): void {
    this.#remove(cacheKey(object));
  }

  #remove(key: string): void {
    const filed = this.#filed.get(key);
    if (filed === undefined) return;
    this.#filed.delete(key);
    for (const index of this.#indexes.values()) {
      for (const value of index.valuesOf(filed)) {
        const objects = index.byValue.get(value);
        objects?.delete(key);
        if (objects?.size === 0) index.byValue.delete(value);
      }
    }
  }
}

function file<T>(index: Index<T>, key: string, object: T): void {
  for (const value of index.valuesOf(object)) {
    let objects = index.byValue.get(value);
    if (objects === undefined) index.byValue.set(value, (objects = new Map<string, T>()));
    objects.set(key, object);
  }
}

/** The cache's own key of an object: namespace and name. */
function cacheKey(object: CachedObject): string {
  return `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
}
