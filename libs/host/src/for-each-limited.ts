/**
 * Runs `work` on every item, at most `limit` at once (a limit below 1 is 1), started in the
 * items' order: a bounded number of API requests in flight however many items there are. A
 * failure rejects the whole; the items not started yet are left.
 */
export async function forEachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next] as T;
      next += 1;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker));
}
