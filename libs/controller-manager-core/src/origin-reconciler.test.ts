import type { Run, RunStatus } from '@kruntimes/api';
import { asReconciler } from '@kruntimes/controller-runtime';
import { FakeCache, RecordingLogger } from '@kruntimes/controller-runtime/testing';
import { FakeObjectClient } from '@kruntimes/run-client/testing';
import { OriginReconciler } from './origin-controller.ts';
import { LOCAL_ORIGIN, originRun } from './testing/origin-runs.ts';

const NOW = Date.parse('2026-12-04T11:00:00Z');

function run(extra: { status?: RunStatus; function?: boolean; deleting?: boolean; resourceVersion?: string } = {}): Run {
  const metadata = {
    name: 'synced',
    namespace: 'ns',
    uid: 'run-uid',
    resourceVersion: extra.resourceVersion ?? '3',
    ...(extra.deleting === true ? { deletionTimestamp: '2026-12-04T10:59:00Z' } : {}),
  };
  return originRun(metadata, { ...extra, origin: LOCAL_ORIGIN });
}

/** `cached`: what the cache shows; `live`: what the API server holds (the same by default). */
function harness(cached: Run | undefined, live: readonly Run[] = cached === undefined ? [] : [cached]) {
  const runs = new FakeObjectClient<Run>(live);
  const logger = new RecordingLogger();
  const reconciler = new OriginReconciler({ runs, logger, now: () => NOW });
  const cache = new FakeCache<Run>(cached === undefined ? [] : [cached]);
  const reconcile = () => asReconciler(cache, reconciler)('ns/synced', new AbortController().signal);
  return { runs, logger, reconcile };
}

test('a Pending synced Run: its recorded result is written, one status write fenced on the cached version', async () => {
  const { runs, reconcile } = harness(run());

  await expect(reconcile()).resolves.toBeUndefined();

  expect(runs.writes.map((write) => [write.verb, write.outcome])).toEqual([['replaceStatus', 'ok']]);
  expect(runs.live('ns', 'synced')?.status).toMatchObject({
    phase: 'Failed',
    reason: 'NonZeroExit',
    completionTime: '2026-12-04T10:00:01Z',
  });
});

test.each([
  ['already recorded', run({ status: { phase: 'Failed' } })],
  ['being deleted', run({ deleting: true })],
])('a synced Run %s: nothing is written', async (_name, cached) => {
  const { runs, reconcile } = harness(cached);

  await expect(reconcile()).resolves.toBeUndefined();

  expect(runs.writes).toEqual([]);
});

test('a Run no longer in the cache: nothing is read or written', async () => {
  const { runs, reconcile } = harness(undefined, [run()]);

  await expect(reconcile()).resolves.toBeUndefined();

  expect(runs.writes).toEqual([]);
});

test('a record the state machine refuses (a function Run): logged as an error, not retried', async () => {
  const { runs, logger, reconcile } = harness(run({ function: true }));

  await expect(reconcile()).resolves.toBeUndefined();

  expect(runs.writes).toEqual([]);
  expect(logger.messages('error')).toEqual(['the recorded result of a synced Run was refused']);
});

test('the Run changed since the cache showed it (Conflict): no retry here, its watch event brings the new version', async () => {
  const { runs, reconcile } = harness(run({ resourceVersion: '3' }), [run({ resourceVersion: '4' })]);

  await expect(reconcile()).resolves.toBeUndefined();

  expect(runs.writes.map((write) => write.outcome)).toEqual(['Conflict']);
  expect(runs.live('ns', 'synced')?.status).toBeUndefined();
});

test('the Run deleted since the cache showed it (NotFound): no error', async () => {
  const { runs, reconcile } = harness(run(), []);

  await expect(reconcile()).resolves.toBeUndefined();

  expect(runs.writes.map((write) => write.outcome)).toEqual(['NotFound']);
});
