// Upload grants expire no later than the Pod Lease as runtimed last renewed it: the
// expiry it reckons is counted from when the renewal was sent, and a Pod clock that is
// off (the renewTime written) does not move it.
import { Cluster } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { PodLease } from '../src/pod-lease.ts';

const cluster = Cluster.fromEnvironment();
const logger = { error: () => undefined, debug: () => undefined };
let namespace: TestNamespace;

beforeAll(async () => {
  namespace = await cluster.createNamespace({ prefix: 'lease-expiry' });
});
afterAll(async () => {
  await namespace.delete();
});

test('no expiry before the first renewal; then the send time of the last successful renewal plus the duration', async () => {
  const lease = new PodLease({
    kubeConfig: cluster.kubeConfig(),
    pod: { name: 'pod-a', namespace: namespace.name, uid: '00000000-0000-4000-8000-0000000000c1', ip: '127.0.0.1' },
    runtime: 'rt',
    durationSeconds: 30,
    renewSeconds: 3600,
    logger,
    // A Pod clock an hour behind: written as renewTime, never used for the expiry.
    now: () => Date.now() - 3_600_000,
  });
  expect(lease.expiresAtMs()).toBeUndefined();
  const before = Date.now();
  await lease.start();
  const after = Date.now();
  const first = lease.expiresAtMs() ?? 0;
  expect(first).toBeGreaterThanOrEqual(before + 30_000);
  expect(first).toBeLessThanOrEqual(after + 30_000);
  await lease.renew();
  expect(lease.expiresAtMs()).toBeGreaterThanOrEqual(after + 30_000);
  await lease.stop();
});
