// Kubernetes API semantics the Run lifecycle depends on (docs/lifecycle.md: "Who writes what", "Fencing"), shown on
// the real API server with the generated Run CRD.
import { Cluster } from '../src/cluster.ts';
import type { TestNamespace } from '../src/cluster.ts';
import { rejection, RunClient, taskSpec } from './support/runs.ts';
import { RecordedWatch, summary } from './support/watch.ts';

const cluster = Cluster.fromEnvironment();
let namespace: TestNamespace;
let runs: RunClient;

beforeEach(async () => {
  namespace = await cluster.createNamespace({ prefix: 'semantics' });
  runs = new RunClient(cluster.kubeConfig(), namespace.name);
});
afterEach(async () => {
  await namespace.delete();
});

describe('status subresource', () => {
  test('a status write does not change spec', async () => {
    const run = await runs.create('r', taskSpec({ ttlSecondsAfterFinished: 100 }));
    const written = await runs.replaceStatus({
      ...run,
      spec: { ...run.spec, ttlSecondsAfterFinished: 1, cancelRequested: true },
      status: { phase: 'Pending', attempt: 1 },
    });
    expect(written.status).toEqual({ phase: 'Pending', attempt: 1 });
    expect(written.spec).toEqual(run.spec);
    expect((await runs.get('r')).spec).toEqual(run.spec);
  });

  test('a spec write does not change status', async () => {
    await runs.create('r', taskSpec({ ttlSecondsAfterFinished: 100 }));
    const withStatus = await runs.updateStatus('r', { phase: 'Running', attempt: 1 });
    const written = await runs.replace({
      ...withStatus,
      spec: { ...withStatus.spec, ttlSecondsAfterFinished: 1 },
      status: { phase: 'Succeeded', attempt: 7 },
    });
    expect(written.spec.ttlSecondsAfterFinished).toBe(1);
    expect(written.status).toEqual({ phase: 'Running', attempt: 1 });
  });

  test('status given at create is dropped', async () => {
    const created = await runs.create('r', taskSpec());
    expect(created.status).toBeUndefined();
  });
});

describe('optimistic concurrency', () => {
  test('a write with a stale resourceVersion gets 409 Conflict, on status and on spec', async () => {
    const stale = await runs.create('r', taskSpec());
    await runs.updateStatus('r', { phase: 'Pending', attempt: 1 });

    const statusConflict = await rejection(runs.replaceStatus({ ...stale, status: { phase: 'Scheduled', attempt: 1 } }));
    expect(statusConflict).toMatchObject({ code: 409, reason: 'Conflict' });
    const specConflict = await rejection(runs.replace({ ...stale, spec: { ...stale.spec, cancelRequested: true } }));
    expect(specConflict).toMatchObject({ code: 409, reason: 'Conflict' });

    // The read-check-write every status writer does: re-read, then write succeeds.
    const fresh = await runs.get('r');
    const written = await runs.replaceStatus({
      ...fresh,
      status: { phase: 'Scheduled', attempt: 1, assignedPod: 'p', assignedPodUID: 'u' },
    });
    expect(written.status?.phase).toBe('Scheduled');
  });
});

describe('finalizers', () => {
  test('a finalizer keeps a deleted Run readable with deletionTimestamp until it is removed', async () => {
    const finalizer = 'kruntimes.io/test-registration';
    await runs.create('r', taskSpec(), { finalizers: [finalizer] });
    await runs.delete('r');

    const deleting = await runs.get('r');
    expect(deleting.metadata.deletionTimestamp).toEqual(expect.any(String));
    expect(deleting.metadata.finalizers).toEqual([finalizer]);
    // Status can still be written while the finalizer holds the object.
    const written = await runs.updateStatus('r', { phase: 'Cancelled', attempt: 1 });
    expect(written.status?.phase).toBe('Cancelled');

    await runs.replace({ ...written, metadata: { ...written.metadata, finalizers: [] } });
    const gone = await rejection(runs.get('r'));
    expect(gone.code).toBe(404);
  });
});

describe('watch', () => {
  test('delivers ADDED, MODIFIED and DELETED in order', async () => {
    const { metadata } = await runs.list();
    const watch = await RecordedWatch.start(cluster.kubeConfig(), runs.path, metadata.resourceVersion);
    try {
      await runs.create('a', taskSpec());
      await runs.updateStatus('a', { phase: 'Pending', attempt: 1 });
      await runs.delete('a');
      const events = await watch.until('ADDED, MODIFIED, DELETED of run a', (e) => e.length >= 3);
      expect(summary(events)).toEqual(['ADDED a', 'MODIFIED a', 'DELETED a']);
      // resourceVersions only grow along one watch.
      const versions = events.map((e) => Number(e.object.metadata?.resourceVersion));
      expect([...versions].sort((x, y) => x - y)).toEqual(versions);
    } finally {
      watch.stop();
    }
  });

  test('a watch from an expired resourceVersion gets 410 Gone; a relist and a new watch recover', async () => {
    await runs.create('before', taskSpec());
    // etcd revision 1 is older than the start of every watch-cache window of this API
    // server: the same answer a client gets when it reconnects with a resourceVersion that
    // the server has since dropped.
    const expired = await RecordedWatch.start(cluster.kubeConfig(), runs.path, '1');
    try {
      const [event] = await expired.until('the 410 error event', (e) => e.length >= 1);
      expect(event).toMatchObject({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } });
    } finally {
      expired.stop();
    }

    // Relist: the list is the new state of the world, and its resourceVersion is current.
    const list = await runs.list();
    expect(list.items.map((r) => r.metadata.name)).toEqual(['before']);
    const resumed = await RecordedWatch.start(cluster.kubeConfig(), runs.path, list.metadata.resourceVersion);
    try {
      await runs.create('after', taskSpec());
      const events = await resumed.until('ADDED after', (e) => e.some((x) => x.type === 'ADDED'));
      // Nothing from before the list is replayed.
      expect(summary(events)).toEqual(['ADDED after']);
    } finally {
      resumed.stop();
    }
  });
});
