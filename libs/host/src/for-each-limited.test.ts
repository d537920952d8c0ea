import { forEachLimited } from './for-each-limited.ts';

describe('forEachLimited', () => {
  it.each<[string, number, number, number]>([
    ['fewer items than the limit: one worker each', 3, 8, 3],
    ['more items than the limit: never more than the limit at once', 10, 4, 4],
    ['a limit below 1 still works through the items, one at a time', 3, 0, 1],
    ['no items: nothing runs', 0, 4, 0],
  ])('%s', async (_name, count, limit, widest) => {
    let inFlight = 0;
    let most = 0;
    const started: number[] = [];
    await forEachLimited(
      Array.from({ length: count }, (_, i) => i),
      limit,
      async (i) => {
        started.push(i);
        inFlight += 1;
        most = Math.max(most, inFlight);
        await new Promise((resolve) => setImmediate(resolve));
        inFlight -= 1;
      },
    );
    expect(started).toEqual(Array.from({ length: count }, (_, i) => i));
    expect(most).toBe(widest);
  });

  it('rejects with the first failure and starts nothing after it', async () => {
    const started: number[] = [];
    const running = forEachLimited([0, 1, 2, 3], 1, async (i) => {
      started.push(i);
      await Promise.resolve();
      if (i === 1) throw new Error('item 1 failed');
    });
    await expect(running).rejects.toThrow('item 1 failed');
    expect(started).toEqual([0, 1]);
  });
});
