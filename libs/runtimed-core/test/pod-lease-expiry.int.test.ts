// Upload grants expire no later than the Pod Lease as runtimed last renewed it: the
// expiry it reckons is counted from when the renewal was sent, and a Pod clock that is
// off (the renewTime written) does not move it.
import { CoreV1Api } from '@kubernetes/client-node';
import { Cluster } from '@kruntimes/testing';
import type { TestNamespace } from '@kruntimes/testing';
import { PodLease } from '../src/pod-lease.ts';

const cluster = Cluster.fromEnvironment();
const logger = { error: () => undefined, debug: () => undefined };
let namespace: TestNamespace;
let podUid: string;

beforeAll(async () => {
  namespace = await cluster.createNamespace({ prefix: 'lease-expiry', waitForDefaultServiceAccount: true });
  // The Lease is owned by its Pod: an owner that does not exist would let the garbage
  // collector delete the Lease under the test. No node runs this Pod.
  const pod = await cluster
    .kubeConfig()
    .makeApiClient(CoreV1Api)
    .createNamespacedPod({
      namespace: namespace.name,
      body: { metadata: { name: 'pod-a' }, spec: { containers: [{ name: 'c', image: 'kruntimes/none:dev' }] } },
    });
  podUid = pod.metadata?.uid ?? '';
});
afterAll(async () => {
  await namespace.delete();
});

test('no expiry before the first renewal; then the send time of the last successful renewal plus the duration', async () => {
  const lease = new PodLease({
    kubeConfig: cluster.kubeConfig(),
    pod: { name: 'pod-a', namespace: namespace.name, uid: podUid, ip: '127.0.0.1' },
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
