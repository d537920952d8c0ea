import { Writable } from 'node:stream';
import { EVENT_REASONS, REGISTRATION_CLEANUP_FINALIZER, RUN_REASONS } from '@kruntimes/api';
import type { Run, RunPhase } from '@kruntimes/api';
import type { ReconcileResult } from '@kruntimes/controller-runtime';
import { FakeCache } from '@kruntimes/controller-runtime/testing';
import { FakeObjectClient } from '@kruntimes/run-client/testing';
import { runtimeServerV1 } from '@kruntimes/proto';
import { AUTOMATIC_RETRY_ALLOWED } from '@kruntimes/run-state';
import { pino } from 'pino';
import { NO_METRICS } from './metrics.ts';
import type { RuntimeServerCalls, TaskArtifacts, WorkspaceSteps } from './reconcile-types.ts';
import { RunClient } from './run-client.ts';
import { RunReconciler } from './run-reconciler.ts';
import type { RunSteps } from './run-reconciler.ts';
import type { Execution, RunWork } from './run-work.ts';

const NOW = Date.parse('2026-12-08T12:00:00Z');
const POD = 'python-abc';
const POD_UID = 'pod-uid';
const KEY = 'ns/r';
/** The requeue after a write that found the cache behind the live Run. */
const STALE = { requeueAfterMs: 200 };

interface RunShape {
  phase?: RunPhase;
  /** Which Pod the attempt is bound to (default this one). */
  pod?: 'here' | 'elsewhere' | 'none';
  function?: boolean;
  runtime?: string;
  cancelRequested?: boolean;
  /** Ready=False Cancelling: the CancelAccepted of an earlier reconcile was written. */
  cancelling?: boolean;
  timeout?: string;
  deleting?: boolean;
  finalizer?: boolean;
}

/** Attempt 1 of Run ns/r (a task unless told), started an hour ago, as runtimed's cache and the API server hold it. */
function run(shape: RunShape = {}): Run {
  const { phase = 'Running', pod = 'here' } = shape;
  const binding = { here: { assignedPod: POD, assignedPodUID: POD_UID }, elsewhere: { assignedPod: 'other', assignedPodUID: 'other-uid' } };
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: {
      name: 'r',
      namespace: 'ns',
      uid: 'run-uid',
      resourceVersion: '7',
      ...(shape.finalizer === true ? { finalizers: [REGISTRATION_CLEANUP_FINALIZER] } : {}),
      ...(shape.deleting === true ? { deletionTimestamp: '2026-12-08T11:59:00Z' } : {}),
    },
    spec: {
      runtime: shape.runtime ?? 'python',
      source: { inline: 'x' },
      mode: shape.function === true ? { function: { handler: 'main:f' } } : { task: {} },
      ...(shape.cancelRequested === true ? { cancelRequested: true } : {}),
      ...(shape.timeout === undefined ? {} : { timeout: shape.timeout }),
    },
    status: {
      phase,
      attempt: 1,
      ...(pod === 'none' ? {} : binding[pod]),
      ...(phase === 'Scheduled' ? {} : { startTime: '2026-12-08T11:00:00Z' }),
      ...(shape.cancelling === true ? { reason: RUN_REASONS.cancelling } : {}),
    },
  };
}

/** What the fake task and function steps do when handed an action. */
interface StepWorld {
  /** tasks.outcomeUnwritten answers this. */
  outcomeUnwritten?: boolean;
  /** tasks.stop returns this (how the stopped task exited). */
  exited?: Execution['exited'];
}

/**
 * The task and function steps behind RunSteps, recording what the shell handed them. An
 * execute leaves an execution in the local state, as the real one does while it runs.
 */
function fakeSteps(steps: string[], world: StepWorld): (work: RunWork) => RunSteps {
  return (work) => ({
    tasks: {
      execute: (ctx, lifetimeRemainingMs) => {
        steps.push(`execute ${ctx.key} lifetime=${String(lifetimeRemainingMs)}${ctx.written === true ? ' (from the claim)' : ''}`);
        const state = work.track(ctx, 'task');
        state.execution ??= { id: 'exec-1', abort: new AbortController(), done: Promise.resolve() };
        return Promise.resolve(undefined);
      },
      writeOutcome: (ctx) => {
        steps.push(`writeOutcome ${ctx.key}`);
        return Promise.resolve(undefined);
      },
      stop: async (ctx, why, beforeStopping) => {
        steps.push(`stop ${ctx.key} ${why}`);
        await beforeStopping?.();
        return world.exited;
      },
      outcomeUnwritten: (key) => {
        steps.push(`outcomeUnwritten ${key}`);
        return Promise.resolve(world.outcomeUnwritten ?? false);
      },
      dropRecordsOfGoneRuns: (namespace) => {
        steps.push(`dropRecordsOfGoneRuns ${namespace}`);
        return Promise.resolve();
      },
    },
    functions: {
      register: (ctx) => {
        steps.push(`register ${ctx.key}${ctx.written === true ? ' (from the claim)' : ''}`);
        return Promise.resolve({ requeueAfterMs: 2_000 });
      },
      watch: (ctx, lifetimeRemainingMs) => {
        steps.push(`watch ${ctx.key} lifetime=${String(lifetimeRemainingMs)}`);
        work.track(ctx, 'function').registrationId = 'reg-1';
        return Promise.resolve({ requeueAfterMs: 2_000 });
      },
      finalize: (ctx) => {
        steps.push(`finalize ${ctx.key}`);
        return Promise.resolve(undefined);
      },
    },
  });
}

const notInThisTest = (): Promise<never> => Promise.reject(new Error('not called by the reconcile shell'));

/** The Runtime Server calls, recorded; a registration holds `inFlight` invocations. */
function fakeServer(calls: string[], inFlight: number): RuntimeServerCalls {
  return {
    register: notInThisTest,
    execute: () => {
      throw new Error('not called by the reconcile shell');
    },
    execution: notInThisTest,
    status: (registrationId) => {
      calls.push(`status ${registrationId}`);
      return Promise.resolve(runtimeServerV1.FunctionStatusResponse.fromPartial({ registrationId, inFlight }));
    },
    unregister: (registrationId) => {
      calls.push(`unregister ${registrationId}`);
      return Promise.resolve({ found: true });
    },
    cancel: (executionId) => {
      calls.push(`cancel ${executionId}`);
      return Promise.resolve({ found: true });
    },
  };
}

const ARTIFACTS: TaskArtifacts = {
  grants: { register: () => ({ token: '', declared: [] }), unregister: () => undefined },
  grantAddress: '',
  verification: { verify: notInThisTest, removeOthers: notInThisTest },
  checkpoints: { load: notInThisTest },
};

interface World extends StepWorld {
  /** What the API server holds (default: the cached Run). */
  live?: Run[];
  /** The Runtime Server's in-flight invocations of a registration. */
  serverInFlight?: number;
}

/** The reconciler over a FakeCache of `cached`, writing through the fenced RunClient to a FakeObjectClient. */
function harness(cached: Run | undefined, world: World = {}) {
  const runs = new FakeObjectClient<Run>(world.live ?? (cached === undefined ? [] : [cached]));
  const cache = new FakeCache<Run>(cached === undefined ? [] : [cached]);
  const steps: string[] = [];
  const calls: string[] = [];
  const lines: { level: number; msg: string }[] = [];
  const logs = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
      done();
    },
  });
  const workspaces: WorkspaceSteps = {
    prepare: notInThisTest,
    outcomesDir: notInThisTest,
    // No attempt directory: a cleanup finds no registration to discover.
    attemptDir: (uid, attempt) => Promise.resolve(`/nonexistent/run-reconciler-test/${uid}/${String(attempt)}`),
    remove: (uid) => {
      calls.push(`remove workspace ${uid}`);
      return Promise.resolve(true);
    },
  };
  const events: string[] = [];
  const clock = { now: NOW };
  const reconciler = new RunReconciler(
    {
      podUID: POD_UID,
      podName: POD,
      runtime: 'python',
      language: 'python',
      gatewayHost: 'gateway',
      gatewayCaPem: undefined,
      cancelGraceMs: 1_000,
      runsPerPod: undefined,
      cached: (namespace, name) => cache.get(name, namespace),
      cachedRuns: (namespace) => cache.list(namespace),
      runs: new RunClient(runs, {}, () => new Date(NOW)),
      server: fakeServer(calls, world.serverInFlight ?? 0),
      artifacts: ARTIFACTS,
      workspaces,
      readConfigMap: notInThisTest,
      automaticRetryPolicy: () => Promise.resolve(AUTOMATIC_RETRY_ALLOWED),
      logger: pino({ level: 'debug' }, logs),
      metrics: NO_METRICS,
      reportReleased: () => {
        calls.push('reportReleased');
        return Promise.resolve();
      },
      recordEvent: (_run, reason) => events.push(reason),
      enqueue: () => undefined,
      now: () => clock.now,
    },
    fakeSteps(steps, world),
  );
  const reconcile = (): Promise<ReconcileResult | undefined> => reconciler.reconcile(KEY);
  const writes = () => runs.writes.map((write) => [write.verb, write.outcome]);
  /** The messages logged at `level` (pino's numbers: 20 debug, 30 info, 40 warn). */
  const logged = (level: number) => lines.filter((line) => line.level === level).map((line) => line.msg);
  /** Forgets what the setup did, so that a row sees only its own reconcile's. */
  const forgetRecords = (): void => {
    for (const list of [steps, calls, lines, events, runs.writes]) list.length = 0;
  };
  return { runs, cache, clock, reconciler, steps, calls, events, reconcile, writes, logged, forgetRecords };
}

const phaseAndReason = (live: Run | undefined): [RunPhase | undefined, string | undefined] => [live?.status?.phase, live?.status?.reason];

interface Row {
  /** The Run in the cache when the row's reconcile runs (undefined: gone). */
  cached: Run | undefined;
  world?: World;
  /** Before: a reconcile of this Run left local state here (an execution running, a registration held). */
  held?: Run;
  /** Before: SIGTERM started the drain with this window. */
  drainSeconds?: number;
  refuse?: ['replace' | 'replaceStatus', 'Conflict' | 'NotFound'];
  result: ReconcileResult | undefined;
  /** The reconcile throws a KruntimesError of this code (the controller retries it) instead of returning `result`. */
  rejects?: string;
  /** What the shell handed its task and function steps. */
  steps: string[];
  writes: string[][];
  /** The Runtime Server calls, workspace removals and Lease reports. */
  calls?: string[];
  /** The live Run's phase and reason after the reconcile. */
  status?: [RunPhase | undefined, string | undefined];
  /** The live Run's status.exitCode after the reconcile (default none). */
  exitCode?: number;
  info?: string[];
  warn?: string[];
  events?: string[];
  /** Local state left after the reconcile (default none). */
  localKeys?: string[];
}

const RUNNING_TASK_STEPS = ['outcomeUnwritten ns/r', 'execute ns/r lifetime=undefined'];

const ROWS: Record<string, Row> = {
  'a Run gone from the cache, nothing held here: only the outcome records of gone Runs are dropped': {
    cached: undefined,
    result: undefined,
    steps: ['dropRecordsOfGoneRuns ns'],
    writes: [],
  },
  'a Run gone from the cache while its task runs here: the execution is stopped, the workspace removed, nothing written': {
    cached: undefined,
    held: run(),
    result: undefined,
    steps: ['dropRecordsOfGoneRuns ns'],
    writes: [],
    calls: ['remove workspace run-uid'],
    info: ['released the Run locally'],
  },
  'a Run gone from the cache while its function is registered here: unregistered, the workspace removed': {
    cached: undefined,
    held: run({ phase: 'Ready', function: true }),
    result: undefined,
    steps: ['dropRecordsOfGoneRuns ns'],
    writes: [],
    calls: ['unregister reg-1', 'remove workspace run-uid'],
    info: ['function unregistered (released)', 'released the Run locally'],
  },
  'a Run of another Runtime: ignored': {
    cached: run({ runtime: 'bash' }),
    result: undefined,
    steps: ['outcomeUnwritten ns/r'],
    writes: [],
  },
  'a Run bound to another Pod: ignored': {
    cached: run({ pod: 'elsewhere' }),
    result: undefined,
    steps: ['outcomeUnwritten ns/r'],
    writes: [],
  },
  'a Run that moved to another Pod while its task ran here: released locally': {
    cached: run({ pod: 'elsewhere' }),
    held: run(),
    result: undefined,
    steps: ['outcomeUnwritten ns/r'],
    writes: [],
    calls: ['remove workspace run-uid'],
    info: ['released the Run locally'],
  },
  'a task Running here: handed to the task execution, nothing written by the shell': {
    cached: run(),
    result: undefined,
    steps: RUNNING_TASK_STEPS,
    writes: [],
    localKeys: [KEY],
  },
  'a task Running here with a timeout: handed over with the lifetime left': {
    cached: run({ timeout: '2h' }),
    result: undefined,
    steps: ['outcomeUnwritten ns/r', 'execute ns/r lifetime=3600000'],
    writes: [],
    localKeys: [KEY],
  },
  'a task whose attempt ended here with its outcome unwritten: the outcome is written': {
    cached: run({ cancelRequested: true }),
    world: { outcomeUnwritten: true },
    result: undefined,
    steps: ['outcomeUnwritten ns/r', 'writeOutcome ns/r'],
    writes: [],
  },
  'a function Running here: handed to the function lifecycle to register': {
    cached: run({ function: true }),
    result: { requeueAfterMs: 2_000 },
    steps: ['outcomeUnwritten ns/r', 'register ns/r'],
    writes: [],
  },
  'a function Ready here: its registration is watched': {
    cached: run({ phase: 'Ready', function: true }),
    result: { requeueAfterMs: 2_000 },
    steps: ['outcomeUnwritten ns/r', 'watch ns/r lifetime=undefined'],
    writes: [],
    localKeys: [KEY],
  },
  'a task Scheduled here: claimed (Running), then executed from the written Run': {
    cached: run({ phase: 'Scheduled' }),
    result: undefined,
    steps: ['outcomeUnwritten ns/r', 'execute ns/r lifetime=undefined (from the claim)'],
    writes: [['replaceStatus', 'ok']],
    status: ['Running', RUN_REASONS.executing],
    info: ['claimed'],
    localKeys: [KEY],
  },
  'a function Scheduled here: claimed, then registered from the written Run': {
    cached: run({ phase: 'Scheduled', function: true }),
    result: { requeueAfterMs: 2_000 },
    steps: ['outcomeUnwritten ns/r', 'register ns/r (from the claim)'],
    writes: [['replaceStatus', 'ok']],
    status: ['Running', RUN_REASONS.registering],
    info: ['claimed'],
  },
  'a claim whose write finds the Run gone (NotFound): dropped locally, no error': {
    cached: run({ phase: 'Scheduled' }),
    refuse: ['replaceStatus', 'NotFound'],
    result: undefined,
    steps: ['outcomeUnwritten ns/r'],
    writes: [['replaceStatus', 'NotFound']],
    info: ['no longer the owner; dropping the Run locally'],
  },
  'a claim on a cache behind the live Run (already Running): nothing written, looked at again soon': {
    cached: run({ phase: 'Scheduled' }),
    world: { live: [{ ...run(), metadata: { ...run().metadata, resourceVersion: '8' } }] },
    result: STALE,
    steps: ['outcomeUnwritten ns/r'],
    writes: [['replaceStatus', 'Conflict']],
    status: ['Running', undefined],
  },
  'a claim of a Run the live object binds to another Pod: not the owner, dropped locally': {
    cached: run({ phase: 'Scheduled' }),
    world: { live: [{ ...run({ phase: 'Scheduled', pod: 'elsewhere' }), metadata: { ...run().metadata, resourceVersion: '8' } }] },
    result: undefined,
    steps: ['outcomeUnwritten ns/r'],
    writes: [['replaceStatus', 'Conflict']],
    info: ['no longer the owner; dropping the Run locally'],
  },
  'a task with cancel requested: stopped, CancelAccepted then Cancelled written': {
    cached: run({ cancelRequested: true }),
    result: undefined,
    steps: ['outcomeUnwritten ns/r', 'stop ns/r cancel'],
    writes: [
      ['replaceStatus', 'ok'],
      ['replaceStatus', 'ok'],
    ],
    status: ['Cancelled', RUN_REASONS.cancelled],
    info: ['cancelling', 'cancelled'],
  },
  'a task that ended on its own SIGTERM while cancelled: Cancelled with its exit code': {
    cached: run({ cancelRequested: true, cancelling: true }),
    world: { exited: { exitCode: 3, signal: '' } },
    result: undefined,
    steps: ['outcomeUnwritten ns/r', 'stop ns/r cancel'],
    writes: [['replaceStatus', 'ok']],
    status: ['Cancelled', RUN_REASONS.cancelled],
    exitCode: 3,
    info: ['cancelled'],
  },
  'a task killed by a signal while cancelled: Cancelled, no exit code recorded': {
    cached: run({ cancelRequested: true, cancelling: true }),
    world: { exited: { exitCode: -1, signal: 'SIGKILL' } },
    result: undefined,
    steps: ['outcomeUnwritten ns/r', 'stop ns/r cancel'],
    writes: [['replaceStatus', 'ok']],
    status: ['Cancelled', RUN_REASONS.cancelled],
    info: ['cancelled'],
  },
  'a task being cancelled already (Cancelling written before): only Cancelled is written': {
    cached: run({ cancelRequested: true, cancelling: true }),
    result: undefined,
    steps: ['outcomeUnwritten ns/r', 'stop ns/r cancel'],
    writes: [['replaceStatus', 'ok']],
    status: ['Cancelled', RUN_REASONS.cancelled],
    info: ['cancelled'],
  },
  'a cancel whose write finds the Run gone (NotFound): dropped locally, no error': {
    cached: run({ cancelRequested: true }),
    refuse: ['replaceStatus', 'NotFound'],
    result: undefined,
    steps: ['outcomeUnwritten ns/r', 'stop ns/r cancel'],
    writes: [['replaceStatus', 'NotFound']],
    info: ['no longer the owner; dropping the Run locally'],
  },
  'a task past its timeout: stopped, TimedOut written': {
    cached: run({ timeout: '30m' }),
    result: undefined,
    steps: ['outcomeUnwritten ns/r', 'stop ns/r expire'],
    writes: [['replaceStatus', 'ok']],
    status: ['Timeout', RUN_REASONS.timeout],
    info: ['lifetime timeout'],
  },
  'a function being deleted with the cleanup finalizer: handed to the function lifecycle to finalize': {
    cached: run({ phase: 'Ready', function: true, deleting: true, finalizer: true }),
    result: undefined,
    steps: ['outcomeUnwritten ns/r', 'finalize ns/r'],
    writes: [],
  },
  'a Run being deleted without the finalizer: ignored': {
    cached: run({ deleting: true }),
    result: undefined,
    steps: ['outcomeUnwritten ns/r'],
    writes: [],
  },
  'a terminal Run still carrying the finalizer: cleaned up, the finalizer removed': {
    cached: run({ phase: 'Succeeded', finalizer: true }),
    result: undefined,
    steps: ['outcomeUnwritten ns/r'],
    writes: [['replace', 'ok']],
    calls: ['remove workspace run-uid'],
    info: ['workspace removed', 'finalizer removed after the terminal status'],
  },
  'a finalizer removal refused (Conflict on every try): the error is the controller’s to retry': {
    cached: run({ phase: 'Succeeded', finalizer: true }),
    refuse: ['replace', 'Conflict'],
    result: undefined,
    rejects: 'Conflict',
    steps: ['outcomeUnwritten ns/r'],
    writes: Array.from({ length: 6 }, () => ['replace', 'Conflict']),
    calls: ['remove workspace run-uid'],
    info: ['workspace removed'],
  },
  'draining: a Run Scheduled here is given back (RefuseClaim, PodDraining)': {
    cached: run({ phase: 'Scheduled' }),
    drainSeconds: 30,
    result: undefined,
    steps: ['outcomeUnwritten ns/r'],
    writes: [['replaceStatus', 'ok']],
    status: ['Pending', RUN_REASONS.podDraining],
    warn: ['refused the claim: the Pod is stopping or marked for scale-down; the Run goes back to be scheduled'],
  },
  'draining: a Ready function with no invocation in flight is handed over (unregistered, release reported, HandOver)': {
    cached: run({ phase: 'Ready', function: true, finalizer: true }),
    held: run({ phase: 'Ready', function: true, finalizer: true }),
    drainSeconds: 30,
    result: undefined,
    steps: ['outcomeUnwritten ns/r'],
    writes: [
      ['replace', 'ok'],
      ['replaceStatus', 'ok'],
    ],
    calls: ['status reg-1', 'unregister reg-1', 'remove workspace run-uid', 'reportReleased'],
    status: ['Pending', RUN_REASONS.drained],
    info: [
      'function unregistered',
      'workspace removed',
      'function handed over: unregistered, release reported; Pending for the next attempt',
    ],
    events: [EVENT_REASONS.drained],
  },
  'draining: a Ready function with invocations in flight: no handover yet, looked at again soon': {
    cached: run({ phase: 'Ready', function: true }),
    held: run({ phase: 'Ready', function: true }),
    world: { serverInFlight: 1 },
    drainSeconds: 30,
    result: { requeueAfterMs: 100 },
    steps: ['outcomeUnwritten ns/r'],
    writes: [],
    calls: ['status reg-1'],
    localKeys: [KEY],
  },
  'draining, within the window: a running task goes on as planned': {
    cached: run(),
    held: run(),
    drainSeconds: 30,
    result: undefined,
    steps: RUNNING_TASK_STEPS,
    writes: [],
    localKeys: [KEY],
  },
  'draining, past the window: a running task is stopped and Interrupted (DrainWindowExceeded)': {
    cached: run(),
    held: run(),
    drainSeconds: 0,
    result: undefined,
    steps: ['outcomeUnwritten ns/r'],
    writes: [['replaceStatus', 'ok']],
    calls: ['cancel exec-1', 'remove workspace run-uid'],
    status: ['Interrupted', RUN_REASONS.drainWindowExceeded],
    info: ['the drain window ended: stopping the task', 'workspace removed', 'interrupted; not retried'],
  },
};

test.each(Object.entries(ROWS))('%s', async (_name, row) => {
  const h = harness(row.held ?? row.cached, row.world);
  if (row.held !== undefined) {
    await h.reconcile();
    if (row.cached === undefined) h.cache.delete('r', 'ns');
    else h.cache.set(row.cached);
  }
  const drained = row.drainSeconds === undefined ? undefined : h.reconciler.drain('ns', row.drainSeconds);
  h.forgetRecords();
  if (row.refuse !== undefined) h.runs.refuse(row.refuse[0], KEY, row.refuse[1]);

  const reconciled = h.reconcile();

  if (row.rejects === undefined) await expect(reconciled).resolves.toEqual(row.result);
  else await expect(reconciled).rejects.toMatchObject({ code: row.rejects });
  expect(h.steps).toEqual(row.steps);
  expect(h.writes()).toEqual(row.writes);
  expect(h.calls).toEqual(row.calls ?? []);
  if (row.status !== undefined) expect(phaseAndReason(h.runs.live('ns', 'r'))).toEqual(row.status);
  expect(h.runs.live('ns', 'r')?.status?.exitCode).toBe(row.exitCode);
  expect(h.logged(30)).toEqual(row.info ?? []);
  expect(h.logged(40)).toEqual(row.warn ?? []);
  expect(h.events).toEqual(row.events ?? []);
  expect(h.reconciler.localKeys()).toEqual(row.localKeys ?? []);
  // The drain ends once nothing is held, or (with something left) once its clock passed the window and the margins.
  h.clock.now = NOW + 3_600_000;
  await drained;
});
