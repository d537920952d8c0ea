import { RecencyBoundedMap } from '@kruntimes/controller-runtime';
import type { ResolvedStore, StoreResolver } from './artifact-store.ts';

/** How long a resolved store (its spec and credentials) is reused: a rotated Secret is seen within this. */
export const STORE_CACHE_TTL_MS = 30_000;

/** ArtifactStores of one namespace that a Pod's Runs name: a handful; bounded all the same. */
const MAX_CACHED_STORES = 64;

/**
 * Reuses a resolved store for a short while, so that each grant and each verification
 * does not read the ArtifactStore and its Secret again. Calls at once share one read; a
 * failed read is not kept (the next call reads again).
 */
export function cachedStoreResolver(resolve: StoreResolver, options: { ttlMs?: number; now?: () => number } = {}): StoreResolver {
  const ttlMs = options.ttlMs ?? STORE_CACHE_TTL_MS;
  const now = options.now ?? Date.now;
  const cache = new RecencyBoundedMap<string, { at: number; store: Promise<ResolvedStore> }>(MAX_CACHED_STORES);
  return (namespace, name) => {
    const key = `${namespace}/${name}`;
    const hit = cache.get(key);
    if (hit !== undefined && now() - hit.at < ttlMs) return hit.store;
    const entry = { at: now(), store: resolve(namespace, name) };
    cache.set(key, entry);
    entry.store.catch(() => {
      if (cache.get(key) === entry) cache.delete(key);
    });
    return entry.store;
  };
}
