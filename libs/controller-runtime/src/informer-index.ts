/** What an index needs of an object: where the cache keeps it. */
interface CachedObject {
  readonly metadata?: { readonly name?: string | undefined; readonly namespace?: string | undefined } | undefined;
}

/** The values an object is filed under in one index (client-go's IndexFunc); none leaves it out. */
export type IndexFunction<T> = (object: T) => readonly string[];

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
  /** Object key -> the index values it is filed under, per index: where to remove it from. */
  readonly #filed = new Map<string, Map<string, readonly string[]>>();

  /** The same name adds one index: shared informers are shared by components that ask alike. */
  add(name: string, valuesOf: IndexFunction<T>): void {
    if (this.#indexes.has(name)) return;
    if (this.#filed.size > 0) throw new Error(`index ${name} added after the cache was filled`);
    this.#indexes.set(name, { valuesOf, byValue: new Map() });
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
    const filed = new Map<string, readonly string[]>();
    for (const [name, index] of this.#indexes) {
      const values = index.valuesOf(object);
      filed.set(name, values);
      for (const value of values) {
        let objects = index.byValue.get(value);
        if (objects === undefined) index.byValue.set(value, (objects = new Map<string, T>()));
        objects.set(key, object);
      }
    }
    this.#filed.set(key, filed);
  }

  delete(object: T): void {
    this.#remove(cacheKey(object));
  }

  #remove(key: string): void {
    const filed = this.#filed.get(key);
    if (filed === undefined) return;
    this.#filed.delete(key);
    for (const [name, values] of filed) {
      const index = this.#indexes.get(name);
      for (const value of values) {
        const objects = index?.byValue.get(value);
        objects?.delete(key);
        if (objects?.size === 0) index?.byValue.delete(value);
      }
    }
  }
}

/** The cache's own key of an object: namespace and name. */
function cacheKey(object: CachedObject): string {
  return `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
}
