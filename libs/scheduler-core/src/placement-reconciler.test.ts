import type { V1Namespace, V1Pod, V1ReplicaSet } from '@kubernetes/client-node';
import { LABELS, NAMESPACE_BLOCKED_LABEL, RUN_REASONS } from '@kruntimes/api';
import type { Run, RunPhase, Runtime } from '@kruntimes/api';
import type { EventRecorder, ReconcileResult } from '@kruntimes/controller-runtime';
import { FakeCache, RecordingLogger } from '@kruntimes/controller-runtime/testing';
import { FakeObjectClient } from '@kruntimes/run-client/testing';
import { AssumeCache } from './assume-cache.ts';
import { SchedulerMetrics } from './metrics.ts';
import { PlacementReconciler } from './placement-reconciler.ts';
import type { RuntimeQueue } from './placement-reconciler.ts';

const NOW = Date.parse('2026-12-07T12:00:00Z');
const KEY = 'ns/python';
const ACCESS_RECHECK_MS = 10_000;
const POD_UID = 'pod-uid';

type EventOccurrence = Parameters<EventRecorder['event']>[0];

interface RunShape {
  name?: string;
  phase?: RunPhase;
  /** status.source recorded: the snapshot controller made the execution snapshot. */
  snapshot?: boolean;
  creator?: string;
  /** Bound to the Pod and holding its slot. */
  holding?: boolean;
  cancelRequested?: boolean;
  /** Retry backoff: not bound before NOW + this. */
  notBeforeInMs?: number;
}

function run(shape: RunShape = {}): Run {
  const { name = 'r1', snapshot = true } = shape;
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: '7', creationTimestamp: '2026-12-07T11:59:00Z' },
    spec: {
      runtime: 'python',
      source: { inline: 'x' },
      mode: { task: {} },
      ...(shape.creator === undefined ? {} : { creator: { username: shape.creator } }),
      ...(shape.cancelRequested === true ? { cancelRequested: true } : {}),
    },
    status: {
      phase: shape.phase ?? (shape.holding === true ? 'Running' : 'Pending'),
      ...(snapshot ? { source: { digest: `sha256:${'0'.repeat(64)}`, size: 1 } } : {}),
      ...(shape.holding === true ? { assignedPod: 'python-abc', assignedPodUID: POD_UID, attempt: 1 } : {}),
      ...(shape.notBeforeInMs === undefined ? {} : { notBefore: new Date(NOW + shape.notBeforeInMs).toISOString().replace('.000Z', 'Z') }),
    },
  };
}

function runtime(shape: { deleting?: boolean; suspend?: boolean; runs?: number } = {}): Runtime {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Runtime',
    metadata: { name: 'python', namespace: 'ns', ...(shape.deleting === true ? { deletionTimestamp: '2026-12-07T11:59:00Z' } : {}) },
    spec: { language: 'python', runs: shape.runs ?? 1, ...(shape.suspend === true ? { suspend: true } : {}) },
  };
}

function pod(ready: boolean): V1Pod {
  return {
    metadata: { name: 'python-abc', namespace: 'ns', uid: POD_UID, labels: { [LABELS.runtime]: 'python' } },
    status: { podIP: '10.0.0.7', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  };
}

interface World {
  runtime?: Runtime;
  pods?: V1Pod[];
  runs: Run[];
  namespaceLabels?: Record<string, string>;
  /** The review's answer for a creator: allowed, denied, or a failure to ask. */
  review?: 'allowed' | 'denied' | 'unreachable';
  /** The status write of this Run is answered with this refusal. */
  refuse?: [string, 'Conflict' | 'NotFound'];
}

function harness(world: World) {
  const runs = new FakeObjectClient<Run>(world.runs);
  for (const [name, reason] of world.refuse === undefined ? [] : [world.refuse]) runs.refuse('replaceStatus', `ns/${name}`, reason);
  const events: EventOccurrence[] = [];
  const reviews: string[] = [];
  const queued: string[] = [];
  const queue: RuntimeQueue = {
    enqueue: (key) => queued.push(`enqueue ${key}`),
    enqueueRateLimited: (key) => queued.push(`rateLimited ${key}`),
  };
  const metrics = new SchedulerMetrics();
  const namespace: V1Namespace = { metadata: { name: 'ns', labels: world.namespaceLabels ?? {} } };
  const reconciler = new PlacementReconciler({
    caches: {
      runs: new FakeCache<Run>(world.runs),
      runtimes: new FakeCache<Runtime>(world.runtime === undefined ? [] : [world.runtime]),
      pods: new FakeCache<V1Pod>(world.pods ?? []),
      replicaSets: new FakeCache<V1ReplicaSet>(),
      namespaces: new FakeCache<V1Namespace>([namespace]),
    },
    runs,
    events: {
      event: (occurrence) => {
        events.push(occurrence);
        return Promise.resolve(true);
      },
    },
    runtimeUse: {
      review: ({ username }) => {
        reviews.push(username);
        if (world.review === 'unreachable') return Promise.reject(new Error('connect ECONNREFUSED'));
        const allowed = (world.review ?? 'allowed') === 'allowed';
        return Promise.resolve({
          decision: allowed ? 'allowed' : 'denied',
          evaluationError: false,
          reason: allowed ? '' : 'no RoleBinding',
        });
      },
    },
    assume: new AssumeCache(),
    queue,
    logger: new RecordingLogger(),
    metrics,
    now: () => NOW,
    bindConcurrency: 4,
    uncertainBindTtlMs: 30_000,
    accessRecheckMs: ACCESS_RECHECK_MS,
  });
  return { runs, events, reviews, queued, metrics, reconciler };
}

interface Row {
  world: World;
  result: ReconcileResult | undefined;
  /** Each status write: the Run, its outcome, the phase and reason it carried. */
  writes: string[][];
  /** The reasons of the Warning Events recorded. */
  events?: string[];
  /** The creators reviewed. */
  reviews?: string[];
  /**
   * The Runtime put back on the queue by a waiting reason's answer: none when it was written, since the cache still
   * shows the version it was fenced on and the watch event of the write enqueues the Runtime.
   */
  queued?: string[];
  /** binds, bindConflicts, passes, pending Runs of the Runtime. */
  metrics: [number, number, number, number | undefined];
}

const READY = [pod(true)];

const ROWS: Record<string, Row> = {
  'no Runtime: the Run waits RuntimeNotFound': {
    world: { runs: [run()] },
    result: undefined,
    writes: [['r1', 'ok', 'Pending', RUN_REASONS.runtimeNotFound]],
    metrics: [0, 0, 1, 1],
  },
  'the Runtime being deleted: the same as none': {
    world: { runtime: runtime({ deleting: true }), pods: READY, runs: [run()] },
    result: undefined,
    writes: [['r1', 'ok', 'Pending', RUN_REASONS.runtimeNotFound]],
    metrics: [0, 0, 1, 1],
  },
  'the Runtime suspended: the Run waits RuntimeSuspended, a Warning Event, no review': {
    world: { runtime: runtime({ suspend: true }), pods: READY, runs: [run({ creator: 'alice' })] },
    result: undefined,
    writes: [['r1', 'ok', 'Pending', RUN_REASONS.runtimeSuspended]],
    events: [RUN_REASONS.runtimeSuspended],
    metrics: [0, 0, 1, 1],
  },
  'the namespace blocked: the Run waits NamespaceBlocked, a Warning Event': {
    world: { runtime: runtime(), pods: READY, runs: [run()], namespaceLabels: { [NAMESPACE_BLOCKED_LABEL]: 'true' } },
    result: undefined,
    writes: [['r1', 'ok', 'Pending', RUN_REASONS.namespaceBlocked]],
    events: [RUN_REASONS.namespaceBlocked],
    metrics: [0, 0, 1, 1],
  },
  'no Pod ready: the Run waits NoReadyPods': {
    world: { runtime: runtime(), pods: [pod(false)], runs: [run()] },
    result: undefined,
    writes: [['r1', 'ok', 'Pending', RUN_REASONS.noReadyPods]],
    metrics: [0, 0, 1, 1],
  },
  'a waiting reason refused Conflict: out of flight, the Runtime enqueued again at once': {
    world: { runtime: runtime(), pods: [pod(false)], runs: [run()], refuse: ['r1', 'Conflict'] },
    result: undefined,
    writes: [['r1', 'Conflict', 'Pending', RUN_REASONS.noReadyPods]],
    queued: [`enqueue ${KEY}`],
    metrics: [0, 0, 1, 1],
  },
  'a ready Pod with a free slot: the Run is bound to it': {
    world: { runtime: runtime(), pods: READY, runs: [run()] },
    result: undefined,
    writes: [['r1', 'ok', 'Scheduled', RUN_REASONS.scheduled]],
    metrics: [1, 0, 1, 0],
  },
  'a Run without a snapshot yet: nothing written, it waits for the snapshot controller': {
    world: { runtime: runtime(), pods: READY, runs: [run({ snapshot: false })] },
    result: undefined,
    writes: [],
    metrics: [0, 0, 1, 1],
  },
  'the Pod’s one slot held: the Run waits NoCapacity': {
    world: { runtime: runtime({ runs: 1 }), pods: READY, runs: [run({ name: 'held', holding: true }), run()] },
    result: undefined,
    writes: [['r1', 'ok', 'Pending', RUN_REASONS.noCapacity]],
    metrics: [0, 0, 1, 1],
  },
  'two Runs for one free slot: one bound, the other waits NoCapacity': {
    world: { runtime: runtime({ runs: 1 }), pods: READY, runs: [run({ name: 'r1' }), run({ name: 'r2' })] },
    result: undefined,
    writes: [
      ['r2', 'ok', 'Pending', RUN_REASONS.noCapacity],
      ['r1', 'ok', 'Scheduled', RUN_REASONS.scheduled],
    ],
    metrics: [1, 0, 1, 1],
  },
  'two slots, one held: the other Run is bound': {
    world: { runtime: runtime({ runs: 2 }), pods: READY, runs: [run({ name: 'held', holding: true }), run()] },
    result: undefined,
    writes: [['r1', 'ok', 'Scheduled', RUN_REASONS.scheduled]],
    metrics: [1, 0, 1, 0],
  },
  'the bind refused Conflict: counted, not a failure; the Run’s event looks again': {
    world: { runtime: runtime(), pods: READY, runs: [run()], refuse: ['r1', 'Conflict'] },
    result: undefined,
    writes: [['r1', 'Conflict', 'Scheduled', RUN_REASONS.scheduled]],
    metrics: [0, 1, 1, 0],
  },
  'the bind refused NotFound: the Run is gone, nothing counted': {
    world: { runtime: runtime(), pods: READY, runs: [run()], refuse: ['r1', 'NotFound'] },
    result: undefined,
    writes: [['r1', 'NotFound', 'Scheduled', RUN_REASONS.scheduled]],
    metrics: [0, 0, 1, 0],
  },
  'a Run cancelled before it was bound: written Cancelled, not bound': {
    world: { runtime: runtime(), pods: READY, runs: [run({ creator: 'alice', cancelRequested: true })] },
    result: undefined,
    writes: [['r1', 'ok', 'Cancelled', RUN_REASONS.cancelledBeforeStart]],
    metrics: [0, 0, 1, 0],
  },
  'a creator allowed: reviewed once, the Run bound': {
    world: { runtime: runtime(), pods: READY, runs: [run({ creator: 'alice' })], review: 'allowed' },
    result: undefined,
    writes: [['r1', 'ok', 'Scheduled', RUN_REASONS.scheduled]],
    reviews: ['alice'],
    metrics: [1, 0, 1, 0],
  },
  'a creator denied: the Run waits Forbidden, a Warning Event, looked at again': {
    world: { runtime: runtime(), pods: READY, runs: [run({ creator: 'alice' })], review: 'denied' },
    result: { requeueAfterMs: ACCESS_RECHECK_MS },
    writes: [['r1', 'ok', 'Pending', RUN_REASONS.forbidden]],
    events: [RUN_REASONS.forbidden],
    reviews: ['alice'],
    metrics: [0, 0, 1, 1],
  },
  'a creator that could not be reviewed: nothing written, looked at again': {
    world: { runtime: runtime(), pods: READY, runs: [run({ creator: 'alice' })], review: 'unreachable' },
    result: { requeueAfterMs: ACCESS_RECHECK_MS },
    writes: [],
    reviews: ['alice'],
    metrics: [0, 0, 1, 1],
  },
  'a Run in retry backoff: not reviewed, looked at again a second after its notBefore': {
    world: { runtime: runtime(), pods: READY, runs: [run({ creator: 'alice', notBeforeInMs: 30_000 })] },
    result: { requeueAfterMs: 31_000 },
    writes: [],
    metrics: [0, 0, 1, 1],
  },
};

describe('PlacementReconciler', () => {
  it.each(Object.entries(ROWS))('%s', async (_name, row) => {
    const { runs, events, reviews, queued, metrics, reconciler } = harness(row.world);
    await expect(reconciler.reconcile(KEY)).resolves.toEqual(row.result);
    // The waiting reasons are written beside the pass.
    await reconciler.waitWritesSettled();
    const written = runs.writes.map((write) => {
      const status = write.body as Run['status'];
      return [write.key.replace('ns/', ''), write.outcome, status?.phase ?? '', status?.reason ?? ''];
    });
    expect(written).toEqual(row.writes);
    expect(events.map((event) => `${event.type} ${event.reason}`)).toEqual((row.events ?? []).map((reason) => `Warning ${reason}`));
    expect(reviews).toEqual(row.reviews ?? []);
    expect(queued).toEqual(row.queued ?? []);
    expect([metrics.binds, metrics.bindConflicts, metrics.passes, metrics.pendingByRuntime.get(KEY)]).toEqual(row.metrics);
    expect(metrics.passDuration.count).toBe(1);
  });
});
