import { WaitTimeoutError } from './errors.ts';
import { waitFor } from './wait.ts';

test('returns the first defined value', async () => {
  let calls = 0;
  const value = await waitFor('the third call', () => Promise.resolve(++calls === 3 ? 'done' : undefined), {
    timeoutMs: 1_000,
    intervalMs: 1,
  });
  expect(value).toBe('done');
  expect(calls).toBe(3);
});

test('is bounded in attempts and reports the last error', async () => {
  let calls = 0;
  const waiting = waitFor(
    'something that never happens',
    () => {
      calls++;
      return Promise.reject(new Error('connection refused'));
    },
    { timeoutMs: 10_000, intervalMs: 1, maxAttempts: 4 },
  );
  await expect(waiting).rejects.toThrow(WaitTimeoutError);
  await expect(waiting).rejects.toThrow(/4 attempts .* something that never happens: connection refused/);
  expect(calls).toBe(4);
});

test('is bounded in time', async () => {
  const started = performance.now();
  await expect(waitFor('never', () => Promise.resolve(undefined), { timeoutMs: 50, intervalMs: 10 })).rejects.toThrow(WaitTimeoutError);
  expect(performance.now() - started).toBeLessThan(1_000);
});

test('stops when aborted', async () => {
  const abort = new AbortController();
  abort.abort(new Error('process exited'));
  await expect(waitFor('never', () => Promise.resolve(undefined), { timeoutMs: 1_000, signal: abort.signal })).rejects.toThrow(
    'process exited',
  );
});
