import type { V1Lease, V1Pod, V1Service } from '@kubernetes/client-node';
import {
  LABELS,
  LEASE_ANNOTATIONS,
  NAMESPACE_AUTOMATIC_RETRY_ANNOTATION,
  REGISTRATION_CLEANUP_FINALIZER,
  RUN_REASONS,
} from '@kruntimes/api';
import type { RetryPolicy, Run, RunPhase } from '@kruntimes/api';
import { asReconciler } from '@kruntimes/controller-runtime';
import type { ReconcileResult } from '@kruntimes/controller-runtime';
import { FakeCache, RecordingLogger } from '@kruntimes/controller-runtime/testing';
import type { WriteVerb } from '@kruntimes/run-client/testing';
import { FakeObjectClient } from '@kruntimes/run-client/testing';
import { LeaseObservations } from './lease-observations.ts';
import { RecoveryMetrics } from './metrics.ts';
import { RecoveryReconciler } from './recovery-reconciler.ts';
import { RunWrites } from './run-writes.ts';

const NOW = Date.parse('2026-12-07T12:00:00Z');
const POD = 'python-abc';
const POD_UID = 'pod-uid';
const LEASE_SECONDS = 10;
/** On the monotonic clock, the Lease was first seen at 0: fresh at FRESH_AT, expired at EXPIRED_AT. */
const FRESH_AT = 2_000;
const EXPIRED_AT = 20_000;
/** The default look-again times: a suspect Run's, and a lost race's. */
const RECHECK = { requeueAfterMs: 10_000 };
const CONFLICT = { requeueAfterMs: 200 };
/** A fresh Lease seen at 0 and looked at FRESH_AT expires in 8 s; looked at again 0.5 s after. */
const LEASE_EXPIRY = { requeueAfterMs: LEASE_SECONDS * 1000 - FRESH_AT + 500 };

interface RunShape {
  phase?: RunPhase;
  /** Ready=False Recovering, as stale recovery marks a suspect owner's Run. */
  recovering?: boolean;
  retryPolicy?: RetryPolicy;
  cancelRequested?: boolean;
  deleting?: boolean;
  finalizer?: boolean;
  /** No attempt claimed by a Pod (no epoch). */
  unassigned?: boolean;
  uid?: string;
  /** A function Run (served), else a task. */
  function?: boolean;
}

/** A Run (a task unless told) of attempt 1 owned by Pod python-abc, as stale recovery's cache and the API server hold it. */
function run(shape: RunShape = {}): Run {
  const { phase = 'Running', recovering = false } = shape;
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: {
      name: 'r',
      namespace: 'ns',
      uid: shape.uid ?? 'run-uid',
      resourceVersion: '7',
      ...(shape.finalizer === true ? { finalizers: [REGISTRATION_CLEANUP_FINALIZER] } : {}),
      ...(shape.deleting === true ? { deletionTimestamp: '2026-12-07T11:59:00Z' } : {}),
    },
    spec: {
      runtime: 'python',
      source: { inline: 'x' },
      mode: shape.function === true ? { function: { handler: 'h' } } : { task: {} },
      ...(shape.retryPolicy === undefined ? {} : { retryPolicy: shape.retryPolicy }),
      ...(shape.cancelRequested === true ? { cancelRequested: true } : {}),
    },
    status: {
      phase,
      attempt: 1,
      ...(shape.unassigned === true ? {} : { assignedPod: POD, assignedPodUID: POD_UID }),
      startTime: '2026-12-07T11:00:00Z',
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: recovering ? RUN_REASONS.recovering : RUN_REASONS.executing,
          message: '',
          lastTransitionTime: '2026-12-07T11:00:00Z',
        },
      ],
    },
  };
}

/**
 * The owner as the caches show it: its Pod serving (Ready, in its Service's endpoints),
 * deleting (past its grace period), draining (deleting within it) or gone; its Lease
 * fresh, expired or absent, with what it reports holding and having released.
 */
interface Owner {
  pod: 'serving' | 'deleting' | 'draining' | 'gone';
  lease: 'fresh' | 'expired' | 'absent';
  held?: string;
  released?: string;
}

const HEALTHY: Owner = { pod: 'serving', lease: 'fresh' };
const SILENT: Owner = { pod: 'serving', lease: 'expired' };
const GONE: Owner = { pod: 'gone', lease: 'expired' };
const THIS_ATTEMPT = JSON.stringify([{ uid: 'run-uid', attempt: 1 }]);

function ownerPod(owner: Owner): V1Pod[] {
  if (owner.pod === 'gone') return [];
  const deletion = { deleting: '2026-12-07T11:59:00Z', draining: '2026-12-07T12:00:30Z' }[owner.pod as string];
  return [
    {
      metadata: {
        name: POD,
        namespace: 'ns',
        uid: POD_UID,
        labels: { [LABELS.runtime]: 'python' },
        ...(deletion === undefined ? {} : { deletionTimestamp: new Date(deletion) }),
      },
      status: { podIP: '10.0.0.7', conditions: [{ type: 'Ready', status: 'True' }] },
    },
  ];
}

const SERVICE: V1Service = {
  metadata: { name: 'python', namespace: 'ns' },
  spec: { selector: { [LABELS.runtime]: 'python' }, ports: [{ name: 'grpc', port: 9000 }] },
};

function ownerLease(owner: Owner, resourceVersion = '1'): V1Lease {
  const annotations = {
    ...(owner.held === undefined ? {} : { [LEASE_ANNOTATIONS.heldRuns]: owner.held }),
    ...(owner.released === undefined ? {} : { [LEASE_ANNOTATIONS.releasedRuns]: owner.released }),
  };
  return {
    metadata: { name: POD, namespace: 'ns', resourceVersion, annotations },
    spec: { holderIdentity: POD_UID, leaseDurationSeconds: LEASE_SECONDS },
  };
}

interface World {
  owner: Owner;
  /** What the API server holds (default: the cached Run). */
  live?: Run[];
  namespaceAnnotations?: Record<string, string>;
  automaticRetry?: boolean;
  reportingGrace?: { renewals?: number; minGraceMs?: number };
}

/** The reconciler over FakeCaches of `cached` and its owner, writing to a FakeObjectClient. */
function harness(cached: Run | undefined, world: World) {
  const { owner } = world;
  const runs = new FakeObjectClient<Run>(world.live ?? (cached === undefined ? [] : [cached]));
  const namespaceReads: string[] = [];
  const core = {
    readNamespace: ({ name }: { name: string }) => {
      namespaceReads.push(name);
      return Promise.resolve({ metadata: { name, annotations: world.namespaceAnnotations ?? {} } });
    },
  };
  const mono = { now: 0 };
  const clock = { now: () => mono.now, sleep: () => Promise.resolve() };
  const wall = { now: NOW };
  const observations = new LeaseObservations({ now: clock.now });
  const leases = new FakeCache<V1Lease>(owner.lease === 'absent' ? [] : [ownerLease(owner)]);
  // The Lease informer's add event, as observeLeases feeds it.
  for (const lease of leases.list()) observations.observe(lease);
  mono.now = owner.lease === 'expired' ? EXPIRED_AT : FRESH_AT;
  const logger = new RecordingLogger();
  const metrics = new RecoveryMetrics();
  const pods = new FakeCache<V1Pod>(ownerPod(owner));
  const reconciler = new RecoveryReconciler({
    caches: { pods, services: new FakeCache<V1Service>([SERVICE]), leases },
    observations,
    writes: new RunWrites({ runs, core }),
    logger,
    metrics,
    now: () => wall.now,
    clock,
    automaticRetry: world.automaticRetry,
    reportingGrace: world.reportingGrace,
  });
  const cache = new FakeCache<Run>(cached === undefined ? [] : [cached]);
  const reconcile = (): Promise<ReconcileResult | undefined> =>
    asReconciler(cache, reconciler, { deleting: 'reconcile' })('ns/r', new AbortController().signal);
  const writes = () => runs.writes.map((write) => [write.verb, write.outcome]);
  const info = () => logger.messages('info');
  return { runs, cache, pods, leases, observations, mono, wall, reconciler, metrics, namespaceReads, reconcile, writes, info };
}

function recoveriesCounted(metrics: RecoveryMetrics): string[] {
  return metrics
    .render()
    .split('\n')
    .filter((line) => line.startsWith('kruntimes_recoveries_total{'));
}

const countedLine = (cause: string, outcome: string): string => `kruntimes_recoveries_total{cause="${cause}",outcome="${outcome}"} 1`;

const OWNER_GONE = 'attempt 1 on Pod python-abc: the owner Pod no longer exists';
const RETRY_SAFE: RetryPolicy = { retrySafe: true, maxAttempts: 3 };

interface Row {
  cached: Run | undefined;
  world: World;
  refuse?: [Exclude<WriteVerb, 'create'>, 'Conflict' | 'NotFound'];
  result: ReconcileResult | undefined;
  writes: (string | undefined)[][];
  /** The recovery counted (kruntimes_recoveries_total), if any. */
  counted?: [string, string];
  /** How many times the namespace's retry policy was read (default none). */
  policyReads?: number;
  info: string[];
  /** The live Run's phase and Ready reason after the reconcile. */
  status?: [RunPhase | undefined, string | undefined];
}

const ROWS: Record<string, Row> = {
  'a Run no longer in the cache: nothing is read or written': {
    cached: undefined,
    world: { owner: GONE, live: [run()] },
    result: undefined,
    writes: [],
    info: [],
  },
  'a Run no Pod holds: not stale recovery’s business': {
    cached: run({ phase: 'Pending', unassigned: true }),
    world: { owner: GONE },
    result: undefined,
    writes: [],
    info: [],
  },
  'a healthy owner: nothing written, looked at again when its Lease would expire': {
    cached: run(),
    world: { owner: HEALTHY },
    result: LEASE_EXPIRY,
    writes: [],
    info: [],
  },
  'a healthy owner that lists the Run among those it holds: the same': {
    cached: run(),
    world: { owner: { ...HEALTHY, held: THIS_ATTEMPT } },
    result: LEASE_EXPIRY,
    writes: [],
    info: [],
  },
  'a Pod serving without a Lease yet: nothing to do, nothing to time a look by': {
    cached: run(),
    world: { owner: { pod: 'serving', lease: 'absent' } },
    result: undefined,
    writes: [],
    info: [],
  },
  'the owner’s Lease expired: the Run is marked Recovering (no new attempt) and looked at again': {
    cached: run(),
    world: { owner: SILENT },
    result: RECHECK,
    writes: [['replaceStatus', 'ok']],
    counted: ['leaseExpired', 'markedRecovering'],
    info: ["owner suspect: the owner Pod's Lease expired; waiting for the Pod to be deleted or its owner to confirm the release"],
    status: ['Running', RUN_REASONS.recovering],
  },
  'the owner’s Lease expired and the Run is Recovering already: nothing written, looked at again': {
    cached: run({ recovering: true }),
    world: { owner: SILENT },
    result: RECHECK,
    writes: [],
    info: [],
    status: ['Running', RUN_REASONS.recovering],
  },
  'the cache lags: it shows the Run not yet Recovering, the live Run is: decided again on the live one, nothing written': {
    cached: run(),
    world: { owner: SILENT, live: [run({ recovering: true })] },
    result: RECHECK,
    writes: [],
    info: [],
  },
  'the Run ended since the cache showed it: decided again on the live Run, nothing to do': {
    cached: run(),
    world: { owner: SILENT, live: [run({ phase: 'Succeeded' })] },
    result: undefined,
    writes: [],
    info: [],
  },
  'a Recovering Run whose owner renews its Lease again: Recovered': {
    cached: run({ recovering: true }),
    world: { owner: HEALTHY },
    result: undefined,
    writes: [['replaceStatus', 'ok']],
    counted: ['ownerBack', 'recovered'],
    info: ['the owner renews its Lease and holds the Run again'],
    status: ['Running', RUN_REASONS.executing],
  },
  'the owner Pod is gone and the task is retrySafe: requeued, the namespace’s retry policy read once': {
    cached: run({ retryPolicy: RETRY_SAFE }),
    world: { owner: GONE },
    result: undefined,
    writes: [['replaceStatus', 'ok']],
    counted: ['podGone', 'requeued'],
    policyReads: 1,
    info: [`owner lost: ${OWNER_GONE}`],
    status: ['Pending', RUN_REASONS.retryBackoff],
  },
  'the owner Pod of a function Run is gone: requeued, no retry policy read (a registration is always retried)': {
    cached: run({ phase: 'Ready', function: true }),
    world: { owner: GONE },
    result: undefined,
    writes: [['replaceStatus', 'ok']],
    counted: ['podGone', 'requeued'],
    info: [`owner lost: ${OWNER_GONE}`],
    status: ['Pending', RUN_REASONS.retryBackoff],
  },
  'a retrySafe task whose owner Pod is gone, in a namespace that forbids automatic retries: Interrupted': {
    cached: run({ retryPolicy: RETRY_SAFE }),
    world: { owner: GONE, namespaceAnnotations: { [NAMESPACE_AUTOMATIC_RETRY_ANNOTATION]: 'false' } },
    result: undefined,
    writes: [['replaceStatus', 'ok']],
    counted: ['podGone', 'interrupted'],
    policyReads: 1,
    info: [
      `owner lost and not retried automatically: the namespace retry policy forbids automatic retries (annotation ${NAMESPACE_AUTOMATIC_RETRY_ANNOTATION}="false" on namespace ns); retry it with krt retry: ${OWNER_GONE}`,
    ],
    status: ['Interrupted', RUN_REASONS.ownerLost],
  },
  'a retrySafe task whose owner Pod is gone, in a cluster that forbids automatic retries: Interrupted': {
    cached: run({ retryPolicy: RETRY_SAFE }),
    world: { owner: GONE, automaticRetry: false },
    result: undefined,
    writes: [['replaceStatus', 'ok']],
    counted: ['podGone', 'interrupted'],
    policyReads: 1,
    info: [
      `owner lost and not retried automatically: the cluster retry policy forbids automatic retries (--automatic-retry=false, chart value global.automaticRetry); retry it with krt retry: ${OWNER_GONE}`,
    ],
    status: ['Interrupted', RUN_REASONS.ownerLost],
  },
  'the owner Pod is gone and the task is not retrySafe: Interrupted, no policy read': {
    cached: run(),
    world: { owner: GONE },
    result: undefined,
    writes: [['replaceStatus', 'ok']],
    counted: ['podGone', 'interrupted'],
    info: [`owner lost and the task is not retrySafe: ${OWNER_GONE}`],
    status: ['Interrupted', RUN_REASONS.ownerLost],
  },
  'the owner Pod is gone and no attempts are left: Failed RetriesExhausted': {
    cached: run({ retryPolicy: { retrySafe: true, maxAttempts: 1 } }),
    world: { owner: GONE },
    result: undefined,
    writes: [['replaceStatus', 'ok']],
    counted: ['podGone', 'failed'],
    info: [`owner lost and no attempts left: ${OWNER_GONE}`],
    status: ['Failed', RUN_REASONS.retriesExhausted],
  },
  'the owner Pod is gone and cancel was requested: Cancelled': {
    cached: run({ cancelRequested: true }),
    world: { owner: GONE },
    result: undefined,
    writes: [['replaceStatus', 'ok']],
    counted: ['podGone', 'cancelled'],
    info: [`cancelled: ${OWNER_GONE}`],
    status: ['Cancelled', RUN_REASONS.cancelled],
  },
  'the owner Pod is deleting and unrouted, cancel requested: Interrupted CancelUnconfirmed': {
    cached: run({ cancelRequested: true }),
    world: { owner: { pod: 'deleting', lease: 'expired' } },
    result: undefined,
    writes: [['replaceStatus', 'ok']],
    counted: ['podDeletingAndUnrouted', 'interrupted'],
    info: [
      'cancel requested but never confirmed by the owner: attempt 1 on Pod python-abc: the owner Pod is deleting and out of the Service endpoints',
    ],
    status: ['Interrupted', RUN_REASONS.cancelUnconfirmed],
  },
  'the owner confirmed its release in its expired Lease: a fence without the Pod’s end': {
    cached: run({ cancelRequested: true }),
    world: { owner: { ...SILENT, held: '[]', released: THIS_ATTEMPT } },
    result: undefined,
    writes: [['replaceStatus', 'ok']],
    counted: ['ownerConfirmedRelease', 'cancelled'],
    info: ['cancelled: attempt 1 on Pod python-abc: the owner confirmed it released this attempt'],
    status: ['Cancelled', RUN_REASONS.cancelled],
  },
  'the owner Pod drains within its grace period, renewing its Lease: left to hand the Run over itself': {
    cached: run(),
    world: { owner: { pod: 'draining', lease: 'fresh', held: THIS_ATTEMPT } },
    result: LEASE_EXPIRY,
    writes: [],
    info: [],
  },
  'a Run being deleted whose owner is gone: the registration-cleanup finalizer is removed': {
    cached: run({ deleting: true, finalizer: true }),
    world: { owner: GONE },
    result: undefined,
    writes: [['mergePatch', 'ok']],
    counted: ['podGone', 'finalizerRemoved'],
    info: ['registration-cleanup finalizer removed: the owner Pod no longer exists'],
  },
  'a Run being deleted that no Pod holds: the finalizer is removed': {
    cached: run({ deleting: true, finalizer: true, unassigned: true }),
    world: { owner: GONE },
    result: undefined,
    writes: [['mergePatch', 'ok']],
    counted: ['unassigned', 'finalizerRemoved'],
    info: ['registration-cleanup finalizer removed: no Pod holds the Run'],
  },
  'a Run being deleted whose owner is healthy: the owner removes the finalizer itself': {
    cached: run({ deleting: true, finalizer: true }),
    world: { owner: HEALTHY },
    result: LEASE_EXPIRY,
    writes: [],
    info: [],
  },
  'a Run being deleted without the finalizer: nothing to do': {
    cached: run({ deleting: true }),
    world: { owner: GONE },
    result: undefined,
    writes: [],
    info: [],
  },
  'a finished Run that keeps the finalizer of an owner that is gone: the finalizer is removed': {
    cached: run({ phase: 'Succeeded', finalizer: true }),
    world: { owner: GONE },
    result: undefined,
    writes: [['mergePatch', 'ok']],
    counted: ['podGone', 'finalizerRemoved'],
    info: ['registration-cleanup finalizer removed: the owner Pod no longer exists'],
  },
  'the Run is gone from the API server: nothing written': {
    cached: run(),
    world: { owner: GONE, live: [] },
    result: undefined,
    writes: [],
    info: [],
  },
  'the Run was deleted and made again under its name (another UID): nothing written': {
    cached: run(),
    world: { owner: GONE, live: [run({ uid: 'other-uid' })] },
    result: undefined,
    writes: [],
    info: [],
  },
  'marking Recovering lost a race (Conflict): looked at again shortly': {
    cached: run(),
    world: { owner: SILENT },
    refuse: ['replaceStatus', 'Conflict'],
    result: CONFLICT,
    writes: [['replaceStatus', 'Conflict']],
    info: [],
  },
  'marking Recovering found the Run gone (NotFound): nothing more': {
    cached: run(),
    world: { owner: SILENT },
    refuse: ['replaceStatus', 'NotFound'],
    result: undefined,
    writes: [['replaceStatus', 'NotFound']],
    info: [],
  },
  'Recovered lost a race (Conflict): looked at again shortly': {
    cached: run({ recovering: true }),
    world: { owner: HEALTHY },
    refuse: ['replaceStatus', 'Conflict'],
    result: CONFLICT,
    writes: [['replaceStatus', 'Conflict']],
    info: [],
  },
  'the fence’s write lost a race (Conflict): looked at again shortly': {
    cached: run(),
    world: { owner: GONE },
    refuse: ['replaceStatus', 'Conflict'],
    result: CONFLICT,
    writes: [['replaceStatus', 'Conflict']],
    info: [],
  },
  'the fence’s write found the Run gone (NotFound): nothing more': {
    cached: run(),
    world: { owner: GONE },
    refuse: ['replaceStatus', 'NotFound'],
    result: undefined,
    writes: [['replaceStatus', 'NotFound']],
    info: [],
  },
  'the finalizer’s removal lost a race (Conflict): looked at again shortly': {
    cached: run({ deleting: true, finalizer: true }),
    world: { owner: GONE },
    refuse: ['mergePatch', 'Conflict'],
    result: CONFLICT,
    writes: [['mergePatch', 'Conflict']],
    info: [],
  },
  'the finalizer’s removal found the Run gone (NotFound): nothing more': {
    cached: run({ deleting: true, finalizer: true }),
    world: { owner: GONE },
    refuse: ['mergePatch', 'NotFound'],
    result: undefined,
    writes: [['mergePatch', 'NotFound']],
    info: [],
  },
};

test.each(Object.entries(ROWS))('%s', async (_name, row) => {
  const { runs, metrics, namespaceReads, reconcile, writes, info } = harness(row.cached, row.world);
  if (row.refuse !== undefined) runs.refuse(row.refuse[0], 'ns/r', row.refuse[1]);

  await expect(reconcile()).resolves.toEqual(row.result);

  expect(writes()).toEqual(row.writes);
  expect(info()).toEqual(row.info);
  expect(recoveriesCounted(metrics)).toEqual(row.counted === undefined ? [] : [countedLine(...row.counted)]);
  expect(metrics.statusWriteConflicts).toBe(row.result === CONFLICT ? 1 : 0);
  expect(namespaceReads).toHaveLength(row.policyReads ?? 0);
  if (row.status !== undefined) {
    const status = runs.live('ns', 'r')?.status;
    expect([status?.phase, status?.conditions?.find((condition) => condition.type === 'Ready')?.reason]).toEqual(row.status);
  }
});

/** The fence-wait histogram's sum and count: seconds from the first suspicion of an epoch to its fence. */
function fenceWaits(metrics: RecoveryMetrics): string[] {
  return metrics
    .render()
    .split('\n')
    .filter((line) => /^kruntimes_recovery_fence_wait_seconds_(sum|count) /.test(line));
}

/** The owner's Pod is deleted from the cache and the cache shows the live Run, `afterMs` later on both clocks. */
function ownerGoneAfter(world: ReturnType<typeof harness>, afterMs: number): void {
  world.pods.delete(POD, 'ns');
  const live = world.runs.live('ns', 'r');
  if (live !== undefined) world.cache.set(live);
  world.wall.now += afterMs;
  world.mono.now += afterMs;
}

test('an owner suspected and then fenced 30 s later: the fence wait is 30 s', async () => {
  const world = harness(run({ retryPolicy: RETRY_SAFE }), { owner: SILENT });
  await expect(world.reconcile()).resolves.toEqual(RECHECK);
  ownerGoneAfter(world, 30_000);

  await expect(world.reconcile()).resolves.toBeUndefined();

  expect(world.writes()).toEqual([
    ['replaceStatus', 'ok'],
    ['replaceStatus', 'ok'],
  ]);
  expect(fenceWaits(world.metrics)).toEqual([
    'kruntimes_recovery_fence_wait_seconds_sum 30',
    'kruntimes_recovery_fence_wait_seconds_count 1',
  ]);
});

test('a suspect Run deleted (forgetRun) and its epoch fenced later: no suspicion remembered, the fence wait is 0', async () => {
  const world = harness(run({ retryPolicy: RETRY_SAFE }), { owner: SILENT });
  await world.reconcile();
  world.reconciler.forgetRun('run-uid');
  ownerGoneAfter(world, 30_000);

  await world.reconcile();

  expect(fenceWaits(world.metrics)).toEqual([
    'kruntimes_recovery_fence_wait_seconds_sum 0',
    'kruntimes_recovery_fence_wait_seconds_count 1',
  ]);
});

test('an owner that renews its Lease without listing the Run past the grace: marked Recovering (it stopped reporting)', async () => {
  const owner: Owner = { ...HEALTHY, held: '[]' };
  const world = harness(run(), { owner, reportingGrace: { renewals: 1, minGraceMs: 0 } });
  // Renewals seen before this process saw the Run's last change do not count.
  await expect(world.reconcile()).resolves.toEqual(LEASE_EXPIRY);
  world.mono.now += 1_000;
  const renewed = ownerLease(owner, '2');
  world.leases.set(renewed);
  world.observations.observe(renewed);

  await expect(world.reconcile()).resolves.toEqual(RECHECK);

  expect(world.writes()).toEqual([['replaceStatus', 'ok']]);
  expect(world.info()).toEqual([
    'owner suspect: the owner renews its Lease but no longer holds the Run; waiting for the owner to hold the Run again or confirm its release',
  ]);
});

test('the finalizer’s removal is a merge patch fenced on the live version and UID, keeping the other finalizers', async () => {
  const deleting = run({ deleting: true, finalizer: true });
  deleting.metadata.finalizers = ['example.com/other', REGISTRATION_CLEANUP_FINALIZER];
  const { runs, reconcile } = harness(deleting, { owner: GONE });

  await reconcile();

  expect(runs.writes.map((write) => write.body)).toEqual([
    { metadata: { uid: 'run-uid', resourceVersion: '7', finalizers: ['example.com/other'] } },
  ]);
  expect(runs.live('ns', 'r')?.metadata.finalizers).toEqual(['example.com/other']);
});
