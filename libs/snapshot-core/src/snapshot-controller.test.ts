import { KubeConfig } from '@kubernetes/client-node';
import type { Run, RunStatus } from '@kruntimes/api';
import type { SharedInformer } from '@kruntimes/controller-runtime';
import type { RunStatusWriter, WriteResult } from '@kruntimes/run-client';
import { sourceDigest } from './decide-snapshot.ts';
import { SNAPSHOT_WORKERS, SnapshotController } from './snapshot-controller.ts';

const silent = { error: () => undefined, debug: () => undefined };

function pendingRun(name: string): Run {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: '1' },
    spec: { runtime: 'bash', source: { inline: 'sleep 2' }, mode: { task: {} } },
  };
}

/** The slice of a Run cache the controller reads: get, and enqueueTo (every Run enqueued at once). */
function fakeCache(runs: readonly Run[]): SharedInformer<Run> {
  const byName = new Map(runs.map((run) => [run.metadata.name ?? '', run]));
  return {
    get: (name: string) => byName.get(name),
    enqueueTo: (enqueue: (key: string) => void) => {
      for (const run of runs) enqueue(`ns/${run.metadata.name ?? ''}`);
    },
  } as unknown as SharedInformer<Run>;
}

/** Status writes that stay unanswered until released: how many are in flight at once is what the test reads. */
function heldWrites(runs: readonly Run[]) {
  const state = { inFlight: 0, most: 0, written: [] as string[] };
  const waiting: (() => void)[] = [];
  const byName = new Map(runs.map((run) => [run.metadata.name ?? '', run]));
  const writer: RunStatusWriter = {
    get: (_namespace, name) => Promise.resolve(byName.get(name)),
    replaceStatus: async (run, status): Promise<WriteResult<Run>> => {
      state.inFlight += 1;
      state.most = Math.max(state.most, state.inFlight);
      await new Promise<void>((resolve) => waiting.push(resolve));
      state.inFlight -= 1;
      state.written.push(run.metadata.name ?? '');
      return { ok: true, object: { ...(run as Run), status: status as RunStatus } };
    },
  };
  const release = (): void => {
    for (const resolve of waiting.splice(0)) resolve();
  };
  return { state, writer, release };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
  if (!condition()) throw new Error(`never: ${what}`);
}

describe('SnapshotController', () => {
  it('snapshots a burst of Runs SNAPSHOT_WORKERS at a time: that many status writes are in flight at once', async () => {
    const runs = Array.from({ length: SNAPSHOT_WORKERS * 2 }, (_, i) => pendingRun(`r${String(i)}`));
    const { state, writer, release } = heldWrites(runs);
    // Never dialled: an inline source reads nothing, and status writes go to the fake.
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromClusterAndUser({ name: 'unused', server: 'https://127.0.0.1:1', skipTLSVerify: false }, { name: 'unused' });
    const controller = new SnapshotController({ kubeConfig, runs: fakeCache(runs), logger: silent, runStatus: writer });
    controller.start();
    try {
      await until(() => state.inFlight === SNAPSHOT_WORKERS, `${String(SNAPSHOT_WORKERS)} writes in flight`);
      release();
      await until(() => state.written.length >= SNAPSHOT_WORKERS && state.inFlight === SNAPSHOT_WORKERS, 'the second batch in flight');
      release();
      await until(() => state.written.length === runs.length, 'every Run snapshotted');
      expect(state.most).toBe(SNAPSHOT_WORKERS);
      expect(new Set(state.written)).toEqual(new Set(runs.map((run) => run.metadata.name)));
    } finally {
      release();
      await controller.stop();
    }
  });

  it('reads the full Run when its cache is a projection without the source, and records the digest of its text', async () => {
    const full = pendingRun('p');
    const projected: Run = { ...full, spec: { runtime: 'bash', source: {}, mode: { task: {} } } };
    const written: { name: string; status: RunStatus; resourceVersion: string | undefined }[] = [];
    const reads: string[] = [];
    const writer: RunStatusWriter = {
      get: (_namespace, name) => {
        reads.push(name);
        const live = structuredClone(full);
        live.metadata.resourceVersion = '2';
        return Promise.resolve(live);
      },
      replaceStatus: (run, status): Promise<WriteResult<Run>> => {
        written.push({ name: run.metadata.name ?? '', status: status as RunStatus, resourceVersion: run.metadata.resourceVersion });
        return Promise.resolve({ ok: true, object: { ...(run as Run), status: status as RunStatus } });
      },
    };
    const controller = new SnapshotController({
      kubeConfig: unusedKubeConfig(),
      runs: fakeCache([projected]),
      logger: silent,
      runStatus: writer,
    });
    expect(await controller.reconcile('ns/p', new AbortController().signal)).toBeUndefined();
    expect(reads).toEqual(['p']);
    // Decided on and fenced on the version read, not the cached one.
    expect(written).toEqual([
      { name: 'p', status: expect.objectContaining({ source: sourceDigest('sleep 2') }) as RunStatus, resourceVersion: '2' },
    ]);
  });

  it('reads nothing for a cached Run that needs no snapshot', async () => {
    const done: Run = { ...pendingRun('d'), status: { phase: 'Pending', source: sourceDigest('sleep 2') } };
    const writer: RunStatusWriter = {
      get: () => Promise.reject(new Error('read')),
      replaceStatus: () => Promise.reject(new Error('written')),
    };
    const controller = new SnapshotController({
      kubeConfig: unusedKubeConfig(),
      runs: fakeCache([done]),
      logger: silent,
      runStatus: writer,
    });
    expect(await controller.reconcile('ns/d', new AbortController().signal)).toBeUndefined();
  });
});

function unusedKubeConfig(): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromClusterAndUser({ name: 'unused', server: 'https://127.0.0.1:1', skipTLSVerify: false }, { name: 'unused' });
  return kubeConfig;
}
