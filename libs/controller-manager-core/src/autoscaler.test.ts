import { ApiException } from '@kubernetes/client-node';
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { EVENT_REASONS, LABELS, POD_ANNOTATIONS, RUNTIME_REASONS } from '@kruntimes/api';
import type { Run, Runtime, RuntimeScaling, RuntimeStatus } from '@kruntimes/api';
import { asReconciler } from '@kruntimes/controller-runtime';
import type { EventOccurrence, EventRecorder } from '@kruntimes/controller-runtime';
import { FakeCache, RecordingLogger } from '@kruntimes/controller-runtime/testing';
import type { ObjectApi } from '@kruntimes/run-client';
import { FakeObjectClient } from '@kruntimes/run-client/testing';
import { Autoscaler } from './autoscaler.ts';
import { PoolDecisions } from './pool-decisions.ts';

const START = Date.parse('2026-06-01T12:00:00Z');
const KEY = 'ns/python';
const RUNTIME = { apiVersion: 'kruntimes.io/v1alpha1', kind: 'Runtime', name: 'python', namespace: 'ns', uid: 'uid-python' } as const;

interface RuntimeShape {
  replicas?: number;
  scaling?: RuntimeScaling;
  suspend?: boolean;
  generation?: number;
  status?: RuntimeStatus;
}

function runtime({ replicas = 1, scaling, suspend, generation = 1, status }: RuntimeShape = {}): Runtime {
  return {
    apiVersion: RUNTIME.apiVersion,
    kind: RUNTIME.kind,
    metadata: { name: 'python', namespace: 'ns', uid: RUNTIME.uid, resourceVersion: '4', generation },
    spec: {
      language: 'python',
      replicas,
      ...(scaling === undefined ? {} : { scaling }),
      ...(suspend === undefined ? {} : { suspend }),
    },
    ...(status === undefined ? {} : { status }),
  };
}

interface PodShape {
  ready?: boolean;
  /** Its POD_ANNOTATIONS.scaleDown. */
  mark?: string;
  /** Its POD_ANNOTATIONS.deletionCost. */
  cost?: string;
  runtime?: string;
}

function pod(name: string, { ready = true, mark, cost, runtime: of = 'python' }: PodShape = {}): V1Pod {
  const annotations: Record<string, string> = {
    ...(mark === undefined ? {} : { [POD_ANNOTATIONS.scaleDown]: mark }),
    ...(cost === undefined ? {} : { [POD_ANNOTATIONS.deletionCost]: cost }),
  };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: `rv-${name}`, labels: { [LABELS.runtime]: of }, annotations },
    status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  };
}

/** A Run of python: Running on `onPod` (a slot held), or Pending for a slot. */
function run(name: string, onPod?: string): Run {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name, namespace: 'ns', uid: `uid-${name}` },
    spec: { runtime: 'python', source: { inline: 'x' }, mode: { task: {} } },
    status: onPod === undefined ? { phase: 'Pending' } : { phase: 'Running', assignedPodUID: `uid-${onPod}` },
  };
}

const pendingRuns = (count: number): Run[] => Array.from({ length: count }, (_, index) => run(`pending-${String(index)}`));

/** The Pod patches sent (pod, fence, annotations); `refuse` answers one Pod's patch with an API status. */
function fakePods() {
  const patches: { pod: string; resourceVersion: unknown; annotations: unknown }[] = [];
  const refusals = new Map<string, number>();
  const api: Pick<CoreV1Api, 'patchNamespacedPod'> = {
    patchNamespacedPod: ({ name, namespace, body }) => {
      const { metadata } = body as { metadata: { resourceVersion: unknown; annotations: unknown } };
      patches.push({ pod: `${namespace}/${name}`, resourceVersion: metadata.resourceVersion, annotations: metadata.annotations });
      const code = refusals.get(name);
      if (code !== undefined) return Promise.reject(new ApiException(code, 'refused', {}, {}));
      return Promise.resolve({});
    },
  };
  return { api, patches, refuse: (name: string, code: number) => refusals.set(name, code) };
}

function harness(live: Runtime, { pods = [], runs = [] }: { pods?: V1Pod[]; runs?: Run[] } = {}) {
  const clock = { now: START };
  const caches = { pods: new FakeCache<V1Pod>(pods), runs: new FakeCache<Run>(runs) };
  const runtimeCache = new FakeCache<Runtime>([live]);
  const runtimes = new FakeObjectClient<Runtime>([live]);
  const core = fakePods();
  const events: EventOccurrence[] = [];
  const recorder: Pick<EventRecorder, 'event'> = {
    event: (occurrence) => {
      events.push(occurrence);
      return Promise.resolve(true);
    },
  };
  const logger = new RecordingLogger();
  const decisions = new PoolDecisions();
  const due: string[] = [];
  // The API server moves metadata.generation on a spec write; the FakeObjectClient keeps what it stores.
  let generation = live.metadata.generation ?? 0;
  const scaleWrites: Pick<ObjectApi<Runtime>, 'mergePatch'> = {
    mergePatch: async (namespace, name, patch) => {
      const written = await runtimes.mergePatch(namespace, name, patch);
      if (!written.ok) return written;
      generation += 1;
      return { ok: true, object: { ...written.object, metadata: { ...written.object.metadata, generation } } };
    },
  };
  const autoscaler = new Autoscaler({
    caches,
    runtimes: scaleWrites,
    core: core.api,
    events: recorder,
    decisions,
    logger,
    now: () => clock.now,
    onDecision: (key) => due.push(key),
  });
  const reconcile = () => asReconciler(runtimeCache, autoscaler)(KEY, new AbortController().signal);
  /** The watch event of the spec.replicas written: the cache shows the Runtime as the API server holds it. */
  const observeWrite = (): void => {
    const written = runtimes.live('ns', 'python');
    if (written !== undefined) runtimeCache.set({ ...written, metadata: { ...written.metadata, generation } });
  };
  const replicasWrites = () => runtimes.writes.map((write) => [write.body, write.outcome]);
  return { clock, caches, runtimeCache, runtimes, core, events, logger, decisions, due, reconcile, observeWrite, replicasWrites };
}

const replicasPatch = (replicas: number, resourceVersion = '4') => ({ metadata: { resourceVersion }, spec: { replicas } });
const eventsOf = (events: EventOccurrence[]) => events.map(({ type, reason }) => [type, reason]);
const SCALING: RuntimeScaling = { minReplicas: 1, maxReplicas: 5 };

describe('without spec.scaling (a fixed pool)', () => {
  test('its own marks and costs go, a busy Pod gets the busy cost; a foreign mark and another Runtime’s Pods stay; nothing else written', async () => {
    const { core, runtimes, events, due, reconcile } = harness(runtime({ replicas: 3 }), {
      pods: [
        pod('ours', { mark: new Date(START - 60_000).toISOString(), cost: '-1' }),
        pod('busy'),
        pod('foreign', { mark: 'true' }),
        pod('bash-0', { runtime: 'bash', mark: new Date(START).toISOString(), cost: '-1' }),
      ],
      runs: [run('held', 'busy')],
    });

    await expect(reconcile()).resolves.toBeUndefined();

    expect(core.patches).toEqual([
      {
        pod: 'ns/ours',
        resourceVersion: 'rv-ours',
        annotations: { [POD_ANNOTATIONS.scaleDown]: null, [POD_ANNOTATIONS.deletionCost]: null },
      },
      { pod: 'ns/busy', resourceVersion: 'rv-busy', annotations: { [POD_ANNOTATIONS.deletionCost]: '1' } },
    ]);
    expect([runtimes.writes, events, due]).toEqual([[], [], []]);
  });

  test.each([
    [409, 'Conflict'],
    [404, 'NotFound'],
  ])('a Pod patch refused %s is logged and the next Pod patched', async (code) => {
    const { core, logger, reconcile } = harness(runtime(), { pods: [pod('a', { cost: '-1' }), pod('b', { cost: '-1' })] });
    core.refuse('a', code);

    await expect(reconcile()).resolves.toBeUndefined();

    expect(core.patches.map((patch) => patch.pod)).toEqual(['ns/a', 'ns/b']);
    expect(logger.lines).toEqual([
      { level: 'debug', message: 'Pod changed or gone before its scale-down annotations; deciding again', fields: { pod: 'ns/a', code } },
    ]);
  });

  test('a Pod patch failing otherwise fails the pass (the controller retries it), the next Pod not patched', async () => {
    const { core, reconcile } = harness(runtime(), { pods: [pod('a', { cost: '-1' }), pod('b', { cost: '-1' })] });
    core.refuse('a', 500);

    await expect(reconcile()).rejects.toBeInstanceOf(ApiException);

    expect(core.patches.map((patch) => patch.pod)).toEqual(['ns/a']);
  });

  test('spec.scaling removed or the Runtime gone: its decision is dropped and its status due once', async () => {
    for (const end of ['scaling removed', 'gone'] as const) {
      const { runtimeCache, decisions, due, reconcile } = harness(runtime({ scaling: SCALING }));
      await reconcile();
      expect(decisions.get(KEY)).toBeDefined();
      if (end === 'gone') runtimeCache.delete('python', 'ns');
      else runtimeCache.set(runtime());

      await expect(reconcile()).resolves.toBeUndefined();
      await reconcile();

      expect(decisions.get(KEY)).toBeUndefined();
      expect(due).toEqual([KEY, KEY]);
    }
  });
});

describe('with spec.scaling', () => {
  test('Runs waiting: spec.replicas raised, fenced on the cached version; ScaledUp Event and log; the decision handed on', async () => {
    const { runtimes, events, logger, decisions, due, reconcile, replicasWrites } = harness(runtime({ scaling: SCALING }), {
      pods: [pod('p0')],
      runs: pendingRuns(3),
    });

    await expect(reconcile()).resolves.toBeUndefined();

    expect(replicasWrites()).toEqual([[replicasPatch(3), 'ok']]);
    expect(runtimes.live('ns', 'python')?.spec.replicas).toBe(3);
    expect(events.map(({ regarding, type, reason }) => ({ regarding, type, reason }))).toEqual([
      { regarding: RUNTIME, type: 'Normal', reason: EVENT_REASONS.scaledUp },
    ]);
    expect(events[0]?.message).toContain('1 -> 3 Pods');
    expect(logger.lines).toEqual([
      { level: 'debug', message: events[0]?.message, fields: { runtime: KEY, replicas: 3, reason: EVENT_REASONS.scaledUp } },
    ]);
    expect(decisions.get(KEY)).toMatchObject({ desiredReplicas: 3, condition: { status: 'True', reason: RUNTIME_REASONS.scaledUp } });
    expect(due).toEqual([KEY]);
  });

  test('spec.replicas unset counts as the default of one Pod', async () => {
    const live = runtime({ scaling: SCALING });
    delete live.spec.replicas;
    const { events, reconcile, replicasWrites } = harness(live, { runs: pendingRuns(3) });

    await reconcile();

    expect(replicasWrites()).toEqual([[replicasPatch(3), 'ok']]);
    expect(events[0]?.message).toContain('1 -> 3 Pods');
  });

  test.each(['Conflict', 'NotFound'] as const)(
    'the spec.replicas write refused (%s): no Event, no decision handed on; its watch event decides again',
    async (refusal) => {
      const { runtimes, events, logger, due, reconcile, replicasWrites } = harness(runtime({ scaling: SCALING }), { runs: pendingRuns(3) });
      runtimes.refuse('mergePatch', KEY, refusal);

      await expect(reconcile()).resolves.toBeUndefined();

      expect(replicasWrites()).toEqual([[replicasPatch(3), refusal]]);
      expect([events, due]).toEqual([[], []]);
      expect(logger.lines).toEqual([
        {
          level: 'debug',
          message: 'spec.replicas write refused; its watch event decides again',
          fields: { runtime: KEY, reason: refusal },
        },
      ]);
    },
  );

  test('its own write not in the cache yet: nothing decided; once it is, no write and no Warning', async () => {
    const { core, events, reconcile, observeWrite, replicasWrites } = harness(runtime({ scaling: SCALING }), {
      pods: [pod('p0')],
      runs: pendingRuns(3),
    });
    await reconcile();

    await expect(reconcile()).resolves.toBeUndefined();
    observeWrite();
    await expect(reconcile()).resolves.toBeUndefined();

    expect(replicasWrites()).toHaveLength(1);
    expect(core.patches).toEqual([]);
    expect(eventsOf(events)).toEqual([['Normal', EVENT_REASONS.scaledUp]]);
  });

  test('spec.replicas set by someone else after its write: a Warning, then put back', async () => {
    const { runtimeCache, runtimes, events, reconcile, observeWrite, replicasWrites } = harness(runtime({ scaling: SCALING }), {
      runs: pendingRuns(3),
    });
    await reconcile();
    await runtimes.mergePatch('ns', 'python', { spec: { replicas: 1 } });
    observeWrite();
    const seen = runtimeCache.get('python', 'ns')?.metadata.resourceVersion;

    await reconcile();

    expect(eventsOf(events)).toEqual([
      ['Normal', EVENT_REASONS.scaledUp],
      ['Warning', EVENT_REASONS.scaleOverridden],
      ['Normal', EVENT_REASONS.scaledUp],
    ]);
    expect(replicasWrites()).toEqual([
      [replicasPatch(3), 'ok'],
      [{ spec: { replicas: 1 } }, 'ok'],
      [replicasPatch(3, seen), 'ok'],
    ]);
  });

  test.each([
    ['written for the current generation: someone else’s change is reported', 2, [['Warning', EVENT_REASONS.scaleOverridden]]],
    ['written for an older generation: nothing is known, nothing reported', 1, []],
  ])('a new leader and a status %s', async (_name, observedGeneration, expected) => {
    const status: RuntimeStatus = { observedGeneration, desiredReplicas: 3 };
    const { events, reconcile, replicasWrites } = harness(runtime({ scaling: SCALING, generation: 2, status }));

    await reconcile();

    expect(eventsOf(events)).toEqual(expected);
    expect(replicasWrites()).toEqual([]);
  });

  test('a suspended Runtime: its Pending Runs are no demand', async () => {
    const { events, decisions, reconcile, replicasWrites } = harness(runtime({ scaling: SCALING, suspend: true }), {
      pods: [pod('p0')],
      runs: pendingRuns(3),
    });

    await reconcile();

    expect([replicasWrites(), events]).toEqual([[], []]);
    expect(decisions.get(KEY)).toMatchObject({ desiredReplicas: 1, condition: { reason: RUNTIME_REASONS.steady } });
  });

  test('the same decision again: its status is not due again', async () => {
    const { due, reconcile } = harness(runtime({ scaling: SCALING }), { pods: [pod('p0')] });

    await reconcile();
    await reconcile();

    expect(due).toEqual([KEY]);
  });

  test('demand lower: after the delay, empty Pods marked, then removed once confirmed still empty (ScaledDown)', async () => {
    const scaling = { minReplicas: 0, maxReplicas: 5, scaleDownDelaySeconds: 60 };
    const { clock, caches, core, events, reconcile, replicasWrites } = harness(runtime({ scaling, replicas: 2 }), {
      pods: [pod('p0'), pod('p1')],
    });

    // Lower since now: the delay starts, nothing marked.
    await expect(reconcile()).resolves.toEqual({ requeueAfterMs: 60_000 });
    expect(core.patches).toEqual([]);

    // Lower for the delay: both marked (cheapest to delete), kept until the marks settle.
    clock.now = START + 60_000;
    await expect(reconcile()).resolves.toEqual({ requeueAfterMs: 2_000 });
    const mark = new Date(clock.now).toISOString();
    expect(core.patches.map(({ pod: name, annotations }) => [name, annotations])).toEqual(
      ['ns/p0', 'ns/p1'].map((name) => [name, { [POD_ANNOTATIONS.scaleDown]: mark, [POD_ANNOTATIONS.deletionCost]: '-1' }]),
    );
    expect(replicasWrites()).toEqual([]);

    // The marks in the cache and settled: spec.replicas lowered.
    caches.pods.set(pod('p0', { mark, cost: '-1' }), pod('p1', { mark, cost: '-1' }));
    clock.now = START + 62_000;
    await expect(reconcile()).resolves.toBeUndefined();
    expect(replicasWrites()).toEqual([[replicasPatch(0), 'ok']]);
    expect(core.patches).toHaveLength(2);
    expect(eventsOf(events)).toEqual([['Normal', EVENT_REASONS.scaledDown]]);
  });
});
