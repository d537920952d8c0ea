import { backoffDelayMs, backoffResets, KUBELET_BACKOFF } from './backoff.ts';

test.each([
  [1, 10_000],
  [2, 20_000],
  [3, 40_000],
  [5, 160_000],
  [6, 300_000],
  [1000, 300_000],
])('kubelet back-off before restart %i is %i ms', (failures, expected) => {
  expect(backoffDelayMs(KUBELET_BACKOFF, failures)).toBe(expected);
});

test('back-off resets after running twice the maximum', () => {
  expect(backoffResets(KUBELET_BACKOFF, 599_999)).toBe(false);
  expect(backoffResets(KUBELET_BACKOFF, 600_000)).toBe(true);
});
