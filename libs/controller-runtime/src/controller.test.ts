import { KruntimesError } from '@kruntimes/errors';
import { Controller } from './controller.ts';
import type { ControllerLogger } from './controller.ts';
import { WorkQueue } from './work-queue.ts';
import { exponentialFailureRateLimiter } from './rate-limiter.ts';

function recordingLogger(): ControllerLogger & { errors: object[] } {
  const errors: object[] = [];
  return { errors, error: (object) => errors.push(object), debug: () => undefined };
}

/** Resolves once `predicate` holds, polling a bounded number of times. */
async function eventually(predicate: () => boolean, attempts = 200): Promise<void> {
  for (let i = 0; i < attempts; i += 1) {
    if (predicate()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('condition not reached');
}

describe('Controller', () => {
  it('never runs one key on two workers, and coalesces adds made while it runs', async () => {
    const active = new Set<string>();
    const calls: string[] = [];
    let overlap = false;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const controller = new Controller({
      name: 'test',
      workers: 4,
      logger: recordingLogger(),
      reconcile: async (key) => {
        if (active.has(key)) overlap = true;
        active.add(key);
        calls.push(key);
        if (calls.length === 1) await gate;
        active.delete(key);
        return undefined;
      },
    });
    controller.start();
    controller.enqueue('ns/a');
    await eventually(() => calls.length === 1);
    controller.enqueue('ns/a');
    controller.enqueue('ns/a');
    release();
    await eventually(() => calls.length === 2);
    await controller.stop();
    expect(overlap).toBe(false);
    expect(calls).toEqual(['ns/a', 'ns/a']);
  });

  it('requeues thrown errors with backoff and forgets the failures after a success', async () => {
    const queue = new WorkQueue(exponentialFailureRateLimiter({ baseDelayMs: 1, maxDelayMs: 10 }));
    const logger = recordingLogger();
    let calls = 0;
    const controller = new Controller({
      name: 'test',
      queue,
      logger,
      reconcile: () => {
        calls += 1;
        return calls < 3 ? Promise.reject(new Error('API server unavailable')) : Promise.resolve(undefined);
      },
    });
    controller.start();
    controller.enqueue('ns/a');
    await eventually(() => calls === 3);
    await eventually(() => queue.failures('ns/a') === 0);
    await controller.stop();
    expect(logger.errors).toHaveLength(2);
  });

  it('does not requeue a terminal error', async () => {
    const logger = recordingLogger();
    let calls = 0;
    const controller = new Controller({
      name: 'test',
      logger,
      queue: new WorkQueue(exponentialFailureRateLimiter({ baseDelayMs: 1, maxDelayMs: 1 })),
      reconcile: () => {
        calls += 1;
        return Promise.reject(new KruntimesError('InvalidTransition', 'refused', { terminal: true }));
      },
    });
    controller.start();
    controller.enqueue('ns/a');
    await eventually(() => logger.errors.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await controller.stop();
    expect(calls).toBe(1);
    expect(controller.queue.failures('ns/a')).toBe(0);
  });

  it('requeues after requeueAfterMs and passes an abort signal that stop() fires', async () => {
    let calls = 0;
    let signal: AbortSignal | undefined;
    const controller = new Controller({
      name: 'test',
      logger: recordingLogger(),
      reconcile: (_key, abortSignal) => {
        calls += 1;
        signal = abortSignal;
        return Promise.resolve(calls === 1 ? { requeueAfterMs: 5 } : undefined);
      },
    });
    controller.start();
    controller.enqueue('ns/a');
    await eventually(() => calls === 2);
    await controller.stop();
    expect(signal?.aborted).toBe(true);
  });
});
