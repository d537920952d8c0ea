import type { ResolvedStore } from './artifact-store.ts';
import { cachedStoreResolver } from './artifact-store-cache.ts';

/** A resolver that records its calls and answers with a distinct marker each time (no store involved). */
function counting(fail = false) {
  const calls: string[] = [];
  const resolve = (namespace: string, name: string): Promise<ResolvedStore> => {
    calls.push(`${namespace}/${name}`);
    if (fail) return Promise.reject(new Error('unreadable'));
    return Promise.resolve({ prefix: String(calls.length), objects: undefined as unknown as ResolvedStore['objects'] });
  };
  return { calls, resolve };
}

describe('cachedStoreResolver', () => {
  it.each([
    ['within the TTL: one read', 29_999, 1],
    ['at the TTL: read again', 30_000, 2],
  ])('%s', async (_what, laterMs, reads) => {
    let now = 0;
    const { calls, resolve } = counting();
    const cached = cachedStoreResolver(resolve, { now: () => now });
    await cached('ns', 'results');
    now = laterMs;
    await cached('ns', 'results');
    expect(calls).toHaveLength(reads);
  });

  it('keys by namespace and name', async () => {
    const { calls, resolve } = counting();
    const cached = cachedStoreResolver(resolve, { now: () => 0 });
    await Promise.all([cached('a', 'results'), cached('b', 'results'), cached('a', 'other'), cached('a', 'results')]);
    expect(calls).toEqual(['a/results', 'b/results', 'a/other']);
  });

  it('does not keep a failed read', async () => {
    const { calls, resolve } = counting(true);
    const cached = cachedStoreResolver(resolve, { now: () => 0 });
    await expect(cached('ns', 'results')).rejects.toThrow('unreadable');
    await expect(cached('ns', 'results')).rejects.toThrow('unreadable');
    expect(calls).toHaveLength(2);
  });
});
