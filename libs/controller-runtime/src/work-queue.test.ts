import { jest } from '@jest/globals';
import { exponentialFailureRateLimiter } from './rate-limiter.ts';
import { WorkQueue } from './work-queue.ts';

describe('exponentialFailureRateLimiter', () => {
  it.each([
    [1, 10],
    [2, 20],
    [3, 40],
    [5, 100],
    [2000, 100],
  ])('failure %d waits %d ms; forget resets', (failures, delay) => {
    const limiter = exponentialFailureRateLimiter({ baseDelayMs: 10, maxDelayMs: 100 });
    let last = 0;
    for (let i = 0; i < failures; i += 1) last = limiter.when('k');
    expect(last).toBe(delay);
    expect(limiter.failures('k')).toBe(failures);
    limiter.forget('k');
    expect(limiter.failures('k')).toBe(0);
    expect(limiter.when('k')).toBe(10);
  });
});

describe('WorkQueue', () => {
  it('de-duplicates a key that is waiting', async () => {
    const queue = new WorkQueue();
    queue.add('a');
    queue.add('b');
    queue.add('a');
    expect(queue.length).toBe(2);
    expect(await queue.get()).toBe('a');
    expect(await queue.get()).toBe('b');
  });

  it('never hands one key to two workers: re-added while processing, it waits for done', async () => {
    const queue = new WorkQueue();
    queue.add('a');
    const first = await queue.get();
    queue.add('a');
    queue.add('a');
    expect(queue.length).toBe(0);
    queue.add('b');
    expect(await queue.get()).toBe('b');
    queue.done(first ?? '');
    expect(queue.length).toBe(1);
    expect(await queue.get()).toBe('a');
    queue.done('a');
    expect(queue.length).toBe(0);
  });

  it('wakes a waiting worker', async () => {
    const queue = new WorkQueue();
    const next = queue.get();
    queue.add('a');
    expect(await next).toBe('a');
  });

  describe('delays', () => {
    beforeEach(() => {
      jest.useFakeTimers();
    });
    afterEach(() => {
      jest.useRealTimers();
    });

    it('addAfter keeps the earliest deadline', () => {
      const queue = new WorkQueue();
      queue.addAfter('a', 1000);
      queue.addAfter('a', 100);
      queue.addAfter('a', 5000);
      jest.advanceTimersByTime(99);
      expect(queue.length).toBe(0);
      jest.advanceTimersByTime(1);
      expect(queue.length).toBe(1);
      jest.advanceTimersByTime(10_000);
      expect(queue.length).toBe(1);
    });

    it('addAfter with no delay adds at once', () => {
      const queue = new WorkQueue();
      queue.addAfter('a', 0);
      expect(queue.length).toBe(1);
    });

    it('addRateLimited backs off per key and forget resets it', () => {
      const queue = new WorkQueue(exponentialFailureRateLimiter({ baseDelayMs: 10, maxDelayMs: 1000 }));
      queue.addRateLimited('a'); // 10 ms
      jest.advanceTimersByTime(10);
      expect(queue.length).toBe(1);
      queue.addRateLimited('b');
      queue.addRateLimited('b'); // second failure of b: earliest deadline (10 ms) kept
      expect(queue.failures('b')).toBe(2);
      queue.forget('b');
      expect(queue.failures('b')).toBe(0);
    });
  });

  it('shutDown releases waiting workers and refuses new keys', async () => {
    const queue = new WorkQueue();
    const waiting = queue.get();
    queue.addAfter('later', 60_000);
    queue.shutDown();
    expect(await waiting).toBeUndefined();
    queue.add('a');
    expect(await queue.get()).toBeUndefined();
    expect(queue.isShuttingDown).toBe(true);
  });
});
