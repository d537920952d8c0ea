import { CoordinationV1Api, V1MicroTime } from '@kubernetes/client-node';
import { Cluster, StallingProxy } from '@kruntimes/testing';
import { LeaderElectionMetrics, LeaderElector } from '../src/index.ts';
import type { ControllerLogger } from '../src/index.ts';

const cluster = Cluster.fromEnvironment();
const logger: ControllerLogger = { error: () => undefined, debug: () => undefined };

// What a test started, undone after it also when an expectation failed: an elector left
// running retries forever, and it or an open proxy would keep jest from exiting once the
// suite's control plane stopped.
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function run(elector: LeaderElector, callbacks: Parameters<LeaderElector['run']>[0]): Promise<void> {
  const done = elector.run(callbacks);
  cleanups.push(async () => {
    elector.stop();
    await done;
  });
  return done;
}

async function stallingProxy(): Promise<StallingProxy> {
  const proxy = await StallingProxy.start(Number(new URL(cluster.server).port));
  cleanups.push(() => proxy.close());
  return proxy;
}

async function eventually(predicate: () => boolean, what: string, attempts = 200): Promise<void> {
  for (let i = 0; i < attempts; i += 1) {
    if (predicate()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

test('exactly one of two candidates leads; the other takes over when the leader stops', async () => {
  const namespace = await cluster.createNamespace({ prefix: 'leader' });
  const options = {
    kubeConfig: cluster.kubeConfig(),
    namespace: namespace.name,
    leaseName: 'scheduler',
    logger,
    // Long enough that a leader on a loaded machine (renewals delayed by seconds) keeps its
    // Lease: this test is about the hand-over on release, not about expiry.
    leaseDurationSeconds: 15,
    renewDeadlineSeconds: 10,
    retryPeriodSeconds: 0.2,
  };
  const metricsA = new LeaderElectionMetrics();
  const a = new LeaderElector({ ...options, identity: 'a', metrics: metricsA });
  const b = new LeaderElector({ ...options, identity: 'b' });
  const leading = new Set<string>();
  let overlap = false;
  const callbacks = (id: string) => ({
    onStartedLeading: (signal: AbortSignal) => {
      if (leading.size > 0) overlap = true;
      leading.add(id);
      signal.addEventListener('abort', () => leading.delete(id));
    },
  });
  const runA = run(a, callbacks('a'));
  await eventually(() => leading.has('a'), 'a to lead');
  const runB = run(b, callbacks('b'));
  await new Promise((resolve) => setTimeout(resolve, 1000));
  expect([...leading]).toEqual(['a']);
  // Its renewals are measured (start to answer, and how late each started).
  await eventually(() => metricsA.renew.count >= 2, "a's renewals to be measured");
  expect(metricsA.leading).toBe(true);
  expect(metricsA.lateness.count).toBe(metricsA.renew.count);

  a.stop(); // releases the Lease
  await runA;
  expect(metricsA.leading).toBe(false);
  await eventually(() => leading.has('b'), 'b to take over');
  const lease = await cluster
    .kubeConfig()
    .makeApiClient(CoordinationV1Api)
    .readNamespacedLease({ name: 'scheduler', namespace: namespace.name });
  expect(lease.spec?.holderIdentity).toBe('b');
  expect(lease.spec?.leaseTransitions).toBe(1);
  b.stop();
  await runB;
  expect(overlap).toBe(false);
  await namespace.delete();
});

test('a Lease whose holder keeps renewing is never taken over; one that stops renewing is, after a full lease duration', async () => {
  const namespace = await cluster.createNamespace({ prefix: 'leader-expiry' });
  const api = cluster.kubeConfig().makeApiClient(CoordinationV1Api);
  // The test renews the ghost's Lease every 500 ms; 6 s leaves room for renewals delayed by
  // a loaded machine, so that only the stop of the renewals lets the candidate in.
  const leaseDurationSeconds = 6;
  // A "ghost" leader (a frozen process elsewhere) whose renewals this test writes itself.
  await api.createNamespacedLease({
    namespace: namespace.name,
    body: {
      metadata: { name: 'controller', namespace: namespace.name },
      spec: { holderIdentity: 'ghost', leaseDurationSeconds, renewTime: new V1MicroTime(), leaseTransitions: 0 },
    },
  });
  const candidate = new LeaderElector({
    kubeConfig: cluster.kubeConfig(),
    namespace: namespace.name,
    leaseName: 'controller',
    identity: 'candidate',
    logger,
    leaseDurationSeconds,
    renewDeadlineSeconds: 1,
    retryPeriodSeconds: 0.2,
  });
  let leading = false;
  const candidateRun = run(candidate, {
    onStartedLeading: () => {
      leading = true;
    },
  });
  for (let i = 0; i < 8; i += 1) {
    const lease = await api.readNamespacedLease({ name: 'controller', namespace: namespace.name });
    lease.spec = Object.assign(lease.spec ?? {}, { renewTime: new V1MicroTime() });
    await api.replaceNamespacedLease({ name: 'controller', namespace: namespace.name, body: lease });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(leading).toBe(false);
  }
  await eventually(() => leading, 'the candidate to take over the expired Lease', 400);
  const lease = await api.readNamespacedLease({ name: 'controller', namespace: namespace.name });
  expect(lease.spec).toMatchObject({ holderIdentity: 'candidate', leaseTransitions: 1 });
  candidate.stop();
  await candidateRun;
  await namespace.delete();
});

test('a leader whose Lease requests hang stops leading before another candidate starts, and its hung request is abandoned', async () => {
  const namespace = await cluster.createNamespace({ prefix: 'leader-stall' });
  const proxy = await stallingProxy();
  const options = {
    namespace: namespace.name,
    leaseName: 'stale-recovery',
    logger,
    // A 2 s renew deadline lost the Lease before the stall on a loaded machine (a renewal
    // delayed past it, in a suite run beside another). 6 s keeps a leading until the stall;
    // the 4 s to the 10 s lease are the margin this test is about (a steps down first).
    leaseDurationSeconds: 10,
    renewDeadlineSeconds: 6,
    retryPeriodSeconds: 0.2,
  };
  const a = new LeaderElector({ ...options, kubeConfig: proxy.kubeConfig(cluster.kubeConfig()), identity: 'a' });
  const b = new LeaderElector({ ...options, kubeConfig: cluster.kubeConfig(), identity: 'b' });
  const events: string[] = [];
  const callbacks = (id: string) => ({
    onStartedLeading: (signal: AbortSignal) => {
      events.push(`${id} started`);
      signal.addEventListener('abort', () => events.push(`${id} stopped`));
    },
  });
  const runA = run(a, callbacks('a'));
  await eventually(() => a.isLeader, 'a to lead');
  const runB = run(b, callbacks('b'));
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(events).toEqual(['a started']);

  // From here every request of a's hangs: no answer, no error, no closed connection.
  proxy.stall();
  await eventually(() => events.includes('b started'), 'b to take over', 800);
  expect(events).toEqual(['a started', 'a stopped', 'b started']);
  expect(a.isLeader).toBe(false);
  // run() returns although the proxy still holds a's last request: the deadline aborted it.
  await runA;

  b.stop();
  await runB;
  await proxy.close();
  await namespace.delete();
});
