import type { InformerIndex } from './informer-index.ts';
import type { ReadonlyDeep } from './object-key.ts';
import type { ObjectCache } from './object-reconciler.ts';

/**
 * The reads a reconciler makes of a cache (client-go's Lister and Indexer): a
 * SharedInformer's, typed so that a reconciler taking this instead of the informer can be
 * handed an in-memory cache in a test (`@kruntimes/controller-runtime/testing`).
 */
export interface CacheReader<T> extends ObjectCache<T> {
  /** The cached objects of one namespace, or of all when undefined. */
  list(namespace?: string): readonly ReadonlyDeep<T>[];
  /** The cached objects filed under `value` in the index. */
  byIndex<K extends string>(index: InformerIndex<T, K>, value: K): ReadonlyDeep<T>[];
  /** How many cached objects are filed under `value`, without listing them. */
  countByIndex<K extends string>(index: InformerIndex<T, K>, value: K): number;
}
