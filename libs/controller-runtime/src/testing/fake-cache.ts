import type { CacheReader } from '../cache-reader.ts';
import type { CachedObject, InformerIndex } from '../informer-index.ts';
import type { ReadonlyDeep } from '../object-key.ts';

/**
 * An in-memory cache for a reconciler's table test: the reads of a SharedInformer
 * (CacheReader) over the objects it is given. Each is kept as a frozen copy, so a
 * reconciler that changed a cached object instead of a thawed copy fails its test.
 * Indexes need no adding: byIndex files the objects by the index it is handed.
 */
export class FakeCache<T extends CachedObject> implements CacheReader<T> {
  readonly #objects = new Map<string, ReadonlyDeep<T>>();

  constructor(objects: readonly T[] = []) {
    this.set(...objects);
  }

  /** Adds or replaces objects, as the watch's add and update events do. */
  set(...objects: readonly T[]): void {
    for (const object of objects) {
      // Frozen as the reads' type says it is: what a reader of the real cache may not change.
      this.#objects.set(keyOf(object), deepFreeze(structuredClone(object)) as ReadonlyDeep<T>);
    }
  }

  /** Takes an object out, as the watch's delete event does. */
  delete(name: string, namespace?: string): void {
    this.#objects.delete(`${namespace ?? ''}/${name}`);
  }

  get(name: string, namespace?: string): ReadonlyDeep<T> | undefined {
    return this.#objects.get(`${namespace ?? ''}/${name}`);
  }

  list(namespace?: string): readonly ReadonlyDeep<T>[] {
    const all = [...this.#objects.values()];
    return namespace === undefined ? all : all.filter((object) => (object.metadata?.namespace ?? '') === namespace);
  }

  byIndex<K extends string>(index: InformerIndex<T, K>, value: K): ReadonlyDeep<T>[] {
    return [...this.#objects.values()].filter((object) => index.valuesOf(object).includes(value));
  }

  countByIndex<K extends string>(index: InformerIndex<T, K>, value: K): number {
    return this.byIndex(index, value).length;
  }
}

function keyOf(object: CachedObject): string {
  return `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
}

function deepFreeze<V>(value: V): V {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const member of Object.values(value)) deepFreeze(member);
  }
  return value;
}
