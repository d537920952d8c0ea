import type { Run, RunInput, RunInputReason, RunSpec, RunStatus } from '@kruntimes/api';
import { asReconciler } from '@kruntimes/controller-runtime';
import type { EventOccurrence, ReadonlyDeep } from '@kruntimes/controller-runtime';
import { FakeCache, RecordingLogger } from '@kruntimes/controller-runtime/testing';
import type { KruntimesObject } from '@kruntimes/run-client';
import { FakeObjectClient } from '@kruntimes/run-client/testing';
import { TransitionRefusedError } from '@kruntimes/run-state';
import { InputMetrics } from './input-metrics.ts';
import { RunInputReconciler } from './run-input-reconciler.ts';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const MINUTE = 60_000;
const SCHEMA = JSON.stringify({ type: 'object', properties: { approved: { type: 'boolean' } }, required: ['approved'] });
const INPUT = 'report-input-a';

/** A Run waiting for input since `startTime` (10 minutes ago unless given). */
function waitingRun(spec: Partial<RunSpec> = {}, status: Partial<RunStatus> = {}): Run {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name: 'report', namespace: 'ns', uid: 'uid-report', resourceVersion: '7' },
    spec: { runtime: 'python', source: { inline: 'x' }, mode: { task: {} }, ...spec },
    status: {
      phase: 'WaitingInput',
      attempt: 1,
      startTime: new Date(NOW - 10 * MINUTE).toISOString(),
      waitingInput: { schema: SCHEMA, checkpoint: { attempt: 1, digest: `sha256:${'a'.repeat(64)}`, size: 1 }, since: 't' },
      ...status,
    },
  };
}

/** A waiting Run without one of its status fields. */
function waitingRunWithout(field: 'waitingInput' | 'startTime', spec: Partial<RunSpec> = {}): Run {
  const run = waitingRun(spec);
  const { [field]: _dropped, ...status } = run.status ?? {};
  return { ...run, status };
}

/** The Run after another RunInput (`by`) answered response r-1 and continued it as attempt 2. */
function continuedRun(by: string): Run {
  const run = waitingRun();
  const { waitingInput: _answered, ...status } = run.status ?? {};
  return {
    ...run,
    status: { ...status, phase: 'Pending', attempt: 2, responses: [{ responseId: 'r-1', runInput: by, attempt: 2, time: 't' }] },
  };
}

function runInput(data: unknown = { approved: true }, metadata: Partial<RunInput['metadata']> = {}): RunInput {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'RunInput',
    metadata: { name: INPUT, namespace: 'ns', uid: 'uid-input', resourceVersion: '3', generation: 1, ...metadata },
    spec: { runName: 'report', responseId: 'r-1', data },
  };
}

function decidedInput(): RunInput {
  return {
    ...runInput(),
    status: {
      observedGeneration: 1,
      conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: 'm', lastTransitionTime: 't', observedGeneration: 1 }],
    },
  };
}

/** An EventRecorder that keeps what it is asked to record. */
class RecordingEvents {
  readonly occurrences: EventOccurrence[] = [];

  event(occurrence: EventOccurrence): Promise<boolean> {
    this.occurrences.push(occurrence);
    return Promise.resolve(true);
  }
}

/**
 * A FakeObjectClient with two races scripted: another writer acting just before the next
 * status write (the change a fenced write is refused for), and reads seen through a transform.
 */
class RacedObjectClient<T extends KruntimesObject> extends FakeObjectClient<T> {
  readonly #beforeStatusWrites: (() => Promise<unknown>)[] = [];
  #readAs: (object: T) => T = (object) => object;

  beforeNextStatusWrite(action: () => Promise<unknown>): void {
    this.#beforeStatusWrites.push(action);
  }

  readAs(transform: (object: T) => T): void {
    this.#readAs = transform;
  }

  override async get(namespace: string, name: string): Promise<T | undefined> {
    const object = await super.get(namespace, name);
    return object === undefined ? undefined : this.#readAs(object);
  }

  override async replaceStatus(object: ReadonlyDeep<T>, status: ReadonlyDeep<NonNullable<T['status']>>) {
    await this.#beforeStatusWrites.shift()?.();
    return super.replaceStatus(object, status);
  }
}

/**
 * The Run with spec.cancelRequested read as `values` in turn (the last from then on): a
 * decision and the state machine that see one version differently, which only a bug in
 * either can make happen.
 */
function cancelReadAs(run: Run, ...values: boolean[]): Run {
  const spec = { ...run.spec };
  let reads = 0;
  Object.defineProperty(spec, 'cancelRequested', { enumerable: true, get: () => values[Math.min(reads++, values.length - 1)] });
  return { ...run, spec };
}

interface Cluster {
  /** What the caches show; the API server holds the same unless `live` says otherwise. */
  cached?: { runs?: Run[]; inputs?: RunInput[] };
  live?: { runs?: Run[]; inputs?: RunInput[] };
  /** Reconcile with no EventRecorder and no metrics. */
  bare?: boolean;
}

function harness({ cached = {}, live = cached, bare = false }: Cluster = {}) {
  const runs = new RacedObjectClient<Run>(live.runs ?? []);
  const runInputs = new RacedObjectClient<RunInput>(live.inputs ?? []);
  const events = new RecordingEvents();
  const metrics = new InputMetrics();
  const logger = new RecordingLogger();
  const reconciler = new RunInputReconciler({
    clients: { runs, runInputs },
    logger,
    now: () => NOW,
    ...(bare ? {} : { events, metrics }),
  });
  const runCache = new FakeCache<Run>(cached.runs ?? []);
  const inputCache = new FakeCache<RunInput>(cached.inputs ?? []);
  const signal = new AbortController().signal;
  return {
    runs,
    runInputs,
    events,
    metrics,
    logger,
    reconcileInput: () => asReconciler(inputCache, reconciler.input, { deleting: 'reconcile' })(`ns/${INPUT}`, signal),
    reconcileRun: () => asReconciler(runCache, reconciler.waitingRun, { deleting: 'reconcile' })('ns/report', signal),
    statusWrites: (client: FakeObjectClient<Run> | FakeObjectClient<RunInput>) =>
      client.writes.filter((write) => write.verb === 'replaceStatus').map((write) => write.outcome),
    accepted: () => runInputs.live('ns', INPUT)?.status?.conditions?.find((condition) => condition.type === 'Accepted'),
    counted: (family: string) =>
      metrics
        .render()
        .split('\n')
        .filter((line) => line.startsWith(`${family}{`)),
    refusedLines: () => logger.lines.filter((line) => line.message === 'status write refused; reading again').map((line) => line.fields),
  };
}

const DECIDED = 'kruntimes_run_input_decisions_total';
const ENDED = 'kruntimes_waiting_input_ended_total';

describe('input: a RunInput decided against its Run', () => {
  test('answering a waiting Run: the Run continues as attempt 2, the RunInput records it, an Event, a count and a log line', async () => {
    const { runs, runInputs, events, logger, reconcileInput, statusWrites, accepted, counted } = harness({
      cached: { runs: [waitingRun()], inputs: [runInput()] },
    });

    await expect(reconcileInput()).resolves.toBeUndefined();

    expect(statusWrites(runs)).toEqual(['ok']);
    expect(runs.live('ns', 'report')?.status).toMatchObject({
      phase: 'Pending',
      attempt: 2,
      resume: { responseId: 'r-1', runInput: INPUT, input: '{"approved":true}' },
    });
    expect(statusWrites(runInputs)).toEqual(['ok']);
    expect(accepted()).toMatchObject({ status: 'True', reason: 'Accepted', observedGeneration: 1 });
    expect(runInputs.live('ns', INPUT)?.status).toMatchObject({ attempt: 2, runUID: 'uid-report' });
    expect(events.occurrences).toEqual([
      {
        regarding: { apiVersion: 'kruntimes.io/v1alpha1', kind: 'Run', name: 'report', namespace: 'ns', uid: 'uid-report' },
        type: 'Normal',
        reason: 'ResponseAccepted',
        message: `RunInput ${INPUT} (response r-1): response r-1 accepted: Run report continues as attempt 2`,
      },
    ]);
    expect(counted(DECIDED)).toEqual([`${DECIDED}{namespace="ns",reason="Accepted"} 1`]);
    expect(logger.lines).toEqual([
      {
        level: 'debug',
        message: 'decided a RunInput',
        fields: { runInput: `ns/${INPUT}`, run: 'report', responseId: 'r-1', reason: 'Accepted', attempt: 2 },
      },
    ]);
  });

  test.each<[string, Run, unknown, RunInputReason]>([
    ['a finished Run', waitingRun({}, { phase: 'Succeeded' }), { approved: true }, 'RunFinished'],
    ['a Run not waiting yet', waitingRun({}, { phase: 'Running' }), { approved: true }, 'RunNotWaiting'],
    ['a waiting Run with no schema', waitingRunWithout('waitingInput'), { approved: true }, 'RunNotWaiting'],
    ['a Run cancelled while it waits', waitingRun({ cancelRequested: true }), { approved: true }, 'RunCancelled'],
    ['data the schema refuses', waitingRun(), { approved: 'yes' }, 'InputInvalid'],
    ['data over the bound', waitingRun(), { approved: true, padding: 'x'.repeat(70_000) }, 'InputTooLarge'],
  ])('%s: refused for good, the Run untouched, a Warning Event on it', async (_row, run, data, reason) => {
    const { runs, runInputs, events, reconcileInput, statusWrites, accepted, counted } = harness({
      cached: { runs: [run], inputs: [runInput(data)] },
    });

    await expect(reconcileInput()).resolves.toBeUndefined();

    expect(statusWrites(runs)).toEqual([]);
    expect(statusWrites(runInputs)).toEqual(['ok']);
    expect(accepted()).toMatchObject({ status: 'False', reason });
    expect(runInputs.live('ns', INPUT)?.status?.runUID).toBe('uid-report');
    expect(events.occurrences.map(({ type, reason: why, regarding }) => [type, why, regarding.uid])).toEqual([
      ['Warning', `Response${reason}`, 'uid-report'],
    ]);
    expect(counted(DECIDED)).toEqual([`${DECIDED}{namespace="ns",reason="${reason}"} 1`]);
  });

  test('a RunInput without its Run: refused RunNotFound, no Run UID, no Event (there is no Run to put it on)', async () => {
    const { runInputs, events, reconcileInput, accepted, counted } = harness({ cached: { inputs: [runInput()] } });

    await expect(reconcileInput()).resolves.toBeUndefined();

    expect(accepted()).toMatchObject({ status: 'False', reason: 'RunNotFound' });
    expect(runInputs.live('ns', INPUT)?.status?.runUID).toBeUndefined();
    expect(events.occurrences).toEqual([]);
    expect(counted(DECIDED)).toEqual([`${DECIDED}{namespace="ns",reason="RunNotFound"} 1`]);
  });

  test('a response ID another RunInput already answered: DuplicateResponse with the attempt it started, the Run untouched', async () => {
    const { runs, runInputs, events, logger, reconcileInput, statusWrites, accepted, counted } = harness({
      cached: { runs: [continuedRun('report-input-b')], inputs: [runInput()] },
    });

    await expect(reconcileInput()).resolves.toBeUndefined();

    expect(statusWrites(runs)).toEqual([]);
    expect(accepted()).toMatchObject({ status: 'True', reason: 'DuplicateResponse' });
    expect(runInputs.live('ns', INPUT)?.status).toMatchObject({ attempt: 2, runUID: 'uid-report' });
    expect(events.occurrences.map(({ type, reason }) => [type, reason])).toEqual([['Normal', 'ResponseDuplicate']]);
    expect(counted(DECIDED)).toEqual([`${DECIDED}{namespace="ns",reason="DuplicateResponse"} 1`]);
    expect(logger.lines[0]?.fields).toMatchObject({ reason: 'DuplicateResponse', attempt: 2 });
  });

  test('a Run this very RunInput continued (its status write was lost): recorded Accepted, the Run not written again', async () => {
    const { runs, events, reconcileInput, statusWrites, accepted } = harness({
      cached: { runs: [continuedRun(INPUT)], inputs: [runInput()] },
    });

    await expect(reconcileInput()).resolves.toBeUndefined();

    expect(statusWrites(runs)).toEqual([]);
    expect(accepted()).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect(events.occurrences.map(({ reason }) => reason)).toEqual(['ResponseAccepted']);
  });

  test('a Run without a UID: decided, but no Event (it could not name its Run)', async () => {
    const run = continuedRun('report-input-b');
    const { events, reconcileInput, accepted } = harness({
      cached: { runs: [{ ...run, metadata: { name: 'report', namespace: 'ns', resourceVersion: '7' } }], inputs: [runInput()] },
    });

    await reconcileInput();

    expect(accepted()).toMatchObject({ reason: 'DuplicateResponse' });
    expect(events.occurrences).toEqual([]);
  });

  test('without an EventRecorder and metrics: decided and written all the same', async () => {
    const { runs, reconcileInput, statusWrites, accepted } = harness({
      cached: { runs: [waitingRun()], inputs: [runInput()] },
      bare: true,
    });

    await expect(reconcileInput()).resolves.toBeUndefined();

    expect(statusWrites(runs)).toEqual(['ok']);
    expect(accepted()).toMatchObject({ status: 'True', reason: 'Accepted' });
  });

  test.each<[string, Cluster]>([
    [
      'decided in the cache (even if not yet live): the cache is enough',
      { cached: { inputs: [decidedInput()] }, live: { inputs: [runInput()] } },
    ],
    ['decided live though not yet in the cache', { cached: { inputs: [runInput()] }, live: { inputs: [decidedInput()] } }],
    ['gone from the API server, still in the cache', { cached: { inputs: [runInput()] }, live: {} }],
    [
      'being deleted (handed over, deleting: reconcile)',
      {
        cached: { runs: [waitingRun()], inputs: [runInput(undefined, { deletionTimestamp: 't' })] },
        live: { runs: [waitingRun()], inputs: [runInput(undefined, { deletionTimestamp: 't' })] },
      },
    ],
  ])('a RunInput %s: nothing written, no Event', async (_row, cluster) => {
    const { runs, runInputs, events, logger, reconcileInput } = harness({
      ...cluster,
      cached: { runs: [waitingRun()], ...cluster.cached },
    });

    await expect(reconcileInput()).resolves.toBeUndefined();

    expect([...runs.writes, ...runInputs.writes]).toEqual([]);
    expect(events.occurrences).toEqual([]);
    expect(logger.lines).toEqual([]);
  });

  test('a RunInput gone from the cache: not reconciled at all', async () => {
    const { runs, runInputs, reconcileInput } = harness({
      cached: { runs: [waitingRun()] },
      live: { runs: [waitingRun()], inputs: [runInput()] },
    });

    await expect(reconcileInput()).resolves.toBeUndefined();

    expect([...runs.writes, ...runInputs.writes]).toEqual([]);
  });

  test('the Run changed between read and write (Conflict): both read again, decided on the new version', async () => {
    const { runs, events, reconcileInput, statusWrites, accepted, refusedLines } = harness({
      cached: { runs: [waitingRun()], inputs: [runInput()] },
    });
    runs.beforeNextStatusWrite(() => runs.mergePatch('ns', 'report', { metadata: { labels: { touched: 'yes' } } }));

    await expect(reconcileInput()).resolves.toBeUndefined();

    expect(statusWrites(runs)).toEqual(['Conflict', 'ok']);
    expect(refusedLines()).toEqual([{ object: 'runs/ns/report', reason: 'Conflict' }]);
    expect(accepted()).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect(events.occurrences).toHaveLength(1);
  });

  test('the Run deleted between read and write (NotFound): read again, refused RunNotFound', async () => {
    const { runs, reconcileInput, statusWrites, accepted, refusedLines } = harness({
      cached: { runs: [waitingRun()], inputs: [runInput()] },
    });
    runs.beforeNextStatusWrite(() => runs.delete('ns', 'report'));

    await expect(reconcileInput()).resolves.toBeUndefined();

    expect(statusWrites(runs)).toEqual(['NotFound']);
    expect(refusedLines()).toEqual([{ object: 'runs/ns/report', reason: 'NotFound' }]);
    expect(accepted()).toMatchObject({ status: 'False', reason: 'RunNotFound' });
  });

  test('the Run write refused every time: gives up after 5 rounds with Conflict (requeued with backoff), the RunInput untouched', async () => {
    const { runs, runInputs, events, reconcileInput, statusWrites, counted } = harness({
      cached: { runs: [waitingRun()], inputs: [runInput()] },
    });
    runs.refuse('replaceStatus', 'ns/report', 'Conflict');

    await expect(reconcileInput()).rejects.toMatchObject({ code: 'Conflict' });

    expect(statusWrites(runs)).toEqual(Array<string>(5).fill('Conflict'));
    expect(runInputs.writes).toEqual([]);
    expect(events.occurrences).toEqual([]);
    expect(counted(DECIDED)).toEqual([]);
  });

  test('the state machine refusing what the decision accepted: thrown (a bug, not a race), nothing written', async () => {
    const { runs, runInputs, reconcileInput } = harness({ cached: { runs: [waitingRun()], inputs: [runInput()] } });
    runs.readAs((run) => cancelReadAs(run, false, true));

    await expect(reconcileInput()).rejects.toBeInstanceOf(TransitionRefusedError);

    expect([...runs.writes, ...runInputs.writes]).toEqual([]);
  });

  test('the RunInput changed before its status write (Conflict): read again, the Run’s record of it makes it Accepted, one Event', async () => {
    const { runs, runInputs, events, reconcileInput, statusWrites, accepted, counted } = harness({
      cached: { runs: [waitingRun()], inputs: [runInput()] },
    });
    runInputs.beforeNextStatusWrite(() => runInputs.mergePatch('ns', INPUT, { metadata: { labels: { touched: 'yes' } } }));

    await expect(reconcileInput()).resolves.toBeUndefined();

    expect(statusWrites(runs)).toEqual(['ok']);
    expect(statusWrites(runInputs)).toEqual(['Conflict', 'ok']);
    expect(accepted()).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect(runInputs.live('ns', INPUT)?.status?.attempt).toBe(2);
    expect(events.occurrences.map(({ reason }) => reason)).toEqual(['ResponseAccepted']);
    expect(counted(DECIDED)).toEqual([`${DECIDED}{namespace="ns",reason="Accepted"} 1`]);
  });

  test('the RunInput deleted before its status write (NotFound): read again, gone, nothing more', async () => {
    const { runs, runInputs, events, reconcileInput, statusWrites, counted } = harness({
      cached: { runs: [waitingRun()], inputs: [runInput()] },
    });
    runInputs.beforeNextStatusWrite(() => runInputs.delete('ns', INPUT));

    await expect(reconcileInput()).resolves.toBeUndefined();

    expect(statusWrites(runs)).toEqual(['ok']);
    expect(statusWrites(runInputs)).toEqual(['NotFound']);
    expect(events.occurrences).toEqual([]);
    expect(counted(DECIDED)).toEqual([]);
  });

  test('the RunInput status write refused every time: gives up after 5 rounds with Conflict, the Run continued once', async () => {
    const { runs, runInputs, events, reconcileInput, statusWrites } = harness({ cached: { runs: [waitingRun()], inputs: [runInput()] } });
    runInputs.refuse('replaceStatus', `ns/${INPUT}`, 'Conflict');

    await expect(reconcileInput()).rejects.toMatchObject({ code: 'Conflict' });

    expect(statusWrites(runs)).toEqual(['ok']);
    expect(statusWrites(runInputs)).toEqual(Array<string>(5).fill('Conflict'));
    expect(events.occurrences).toEqual([]);
  });
});

describe('waitingRun: a Run waiting for input ended on cancel and timeout', () => {
  const timedOut = () => waitingRun({ timeout: '5m' });
  const cancelled = () => waitingRun({ cancelRequested: true });

  test.each<[string, Run, string, string]>([
    ['cancel requested', cancelled(), 'Cancelled', 'WaitCancelled'],
    ['spec.timeout passed since startTime', timedOut(), 'Timeout', 'WaitTimedOut'],
    [
      'cancel requested on a Run being deleted (handed over, deleting: reconcile)',
      { ...cancelled(), metadata: { ...cancelled().metadata, deletionTimestamp: 't' } },
      'Cancelled',
      'WaitCancelled',
    ],
  ])('%s: ended, counted, logged', async (_row, run, phase, event) => {
    const { runs, logger, reconcileRun, statusWrites, counted } = harness({ cached: { runs: [run] } });

    await expect(reconcileRun()).resolves.toBeUndefined();

    expect(statusWrites(runs)).toEqual(['ok']);
    expect(runs.live('ns', 'report')?.status?.phase).toBe(phase);
    expect(counted(ENDED)).toEqual([`${ENDED}{namespace="ns",phase="${phase}"} 1`]);
    expect(logger.lines).toEqual([
      { level: 'debug', message: 'ended a Run waiting for input', fields: { run: 'ns/report', phase, event } },
    ]);
  });

  test.each<[string, Run]>([
    ['not waiting', waitingRun({ cancelRequested: true }, { phase: 'Running' })],
    ['waiting with no timeout and no cancel', waitingRun()],
    ['waiting with a timeout but no startTime', waitingRunWithout('startTime', { timeout: '5m' })],
  ])('a Run %s: nothing due, nothing written', async (_row, run) => {
    const { runs, logger, reconcileRun } = harness({ cached: { runs: [run] } });

    await expect(reconcileRun()).resolves.toBeUndefined();

    expect(runs.writes).toEqual([]);
    expect(logger.lines).toEqual([]);
  });

  test.each([
    ['15m', 5 * MINUTE, 'at its deadline'],
    ['2h', 10 * MINUTE, 'within 10 minutes even when its deadline is later (a clock that jumps)'],
  ])('a timeout of %s not yet due: requeued after %d ms, %s', async (timeout, afterMs) => {
    const { runs, reconcileRun } = harness({ cached: { runs: [waitingRun({ timeout })] } });

    await expect(reconcileRun()).resolves.toEqual({ requeueAfterMs: afterMs });

    expect(runs.writes).toEqual([]);
  });

  test('due in the cache, but answered meanwhile (the live Run no longer waits): nothing written', async () => {
    const { runs, counted, reconcileRun } = harness({ cached: { runs: [timedOut()] }, live: { runs: [continuedRun(INPUT)] } });

    await expect(reconcileRun()).resolves.toBeUndefined();

    expect(runs.writes).toEqual([]);
    expect(counted(ENDED)).toEqual([]);
  });

  test('due in the cache, not yet by the live Run (a later startTime): requeued for the live deadline', async () => {
    const later = waitingRun({ timeout: '5m' }, { startTime: new Date(NOW - 2 * MINUTE).toISOString() });
    const { runs, reconcileRun } = harness({ cached: { runs: [timedOut()] }, live: { runs: [later] } });

    await expect(reconcileRun()).resolves.toEqual({ requeueAfterMs: 3 * MINUTE });

    expect(runs.writes).toEqual([]);
  });

  test('due in the cache, gone from the API server: nothing written', async () => {
    const { runs, reconcileRun } = harness({ cached: { runs: [cancelled()] }, live: {} });

    await expect(reconcileRun()).resolves.toBeUndefined();

    expect(runs.writes).toEqual([]);
  });

  test('the Run changed before the write (Conflict): read again and ended', async () => {
    const { runs, reconcileRun, statusWrites, refusedLines, counted } = harness({ cached: { runs: [cancelled()] } });
    runs.beforeNextStatusWrite(() => runs.mergePatch('ns', 'report', { metadata: { labels: { touched: 'yes' } } }));

    await expect(reconcileRun()).resolves.toBeUndefined();

    expect(statusWrites(runs)).toEqual(['Conflict', 'ok']);
    expect(refusedLines()).toEqual([{ object: 'runs/ns/report', reason: 'Conflict' }]);
    expect(counted(ENDED)).toEqual([`${ENDED}{namespace="ns",phase="Cancelled"} 1`]);
  });

  test('the write refused Conflict every time: 5 tries, then Conflict (requeued with backoff), not counted', async () => {
    const { runs, reconcileRun, statusWrites, refusedLines, counted } = harness({ cached: { runs: [cancelled()] } });
    runs.refuse('replaceStatus', 'ns/report', 'Conflict');

    await expect(reconcileRun()).rejects.toMatchObject({ code: 'Conflict' });

    expect(statusWrites(runs)).toEqual(Array<string>(5).fill('Conflict'));
    expect(refusedLines()).toHaveLength(5);
    expect(counted(ENDED)).toEqual([]);
  });

  test('the write refused NotFound (deleted meanwhile): nothing more, not counted', async () => {
    const { runs, reconcileRun, statusWrites, counted } = harness({ cached: { runs: [timedOut()] } });
    runs.refuse('replaceStatus', 'ns/report', 'NotFound');

    await expect(reconcileRun()).resolves.toBeUndefined();

    expect(statusWrites(runs)).toEqual(['NotFound']);
    expect(counted(ENDED)).toEqual([]);
  });

  test('the state machine refusing what the decision chose: thrown (a bug, not a race), nothing written', async () => {
    const { runs, reconcileRun } = harness({ cached: { runs: [cancelled()] } });
    runs.readAs((run) => cancelReadAs(run, true, false));

    await expect(reconcileRun()).rejects.toBeInstanceOf(TransitionRefusedError);

    expect(runs.writes).toEqual([]);
  });

  test('without metrics: ended all the same', async () => {
    const { runs, reconcileRun } = harness({ cached: { runs: [timedOut()] }, bare: true });

    await expect(reconcileRun()).resolves.toBeUndefined();

    expect(runs.live('ns', 'report')?.status?.phase).toBe('Timeout');
  });
});
