import type { Run, RunPhase } from '@kruntimes/api';
import { asReconciler } from '@kruntimes/controller-runtime';
import { FakeCache, RecordingLogger } from '@kruntimes/controller-runtime/testing';
import { FakeObjectClient } from '@kruntimes/run-client/testing';
import { RunCollector } from './run-collector.ts';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const HISTORY_LIMIT = 2;

interface RunShape {
  phase?: RunPhase;
  runtime?: string;
  /** Seconds before NOW it finished. */
  finishedAgoS?: number;
  ttlSeconds?: number;
  deleting?: boolean;
}

function run(name: string, shape: RunShape = {}): Run {
  const { phase = 'Succeeded', runtime = 'python', finishedAgoS = 60, ttlSeconds, deleting = false } = shape;
  const finished = new Date(NOW - finishedAgoS * 1000).toISOString();
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: {
      name,
      namespace: 'ns',
      uid: `uid-${name}`,
      resourceVersion: '7',
      creationTimestamp: new Date(NOW - 3_600_000).toISOString(),
      ...(deleting ? { deletionTimestamp: finished, finalizers: ['test/keep'] } : {}),
    },
    spec: {
      runtime,
      source: { inline: 'x' },
      mode: { task: {} },
      ...(ttlSeconds === undefined ? {} : { ttlSecondsAfterFinished: ttlSeconds }),
    },
    status: { phase, ...(phase === 'Succeeded' || phase === 'Failed' ? { completionTime: finished } : {}) },
  };
}

function harness(runs: Run[]) {
  const cache = new FakeCache<Run>(runs);
  const client = new FakeObjectClient<Run>(runs);
  const logger = new RecordingLogger();
  const collector = new RunCollector({
    caches: { runs: cache },
    runs: client,
    logger,
    finishedRunsPerRuntime: HISTORY_LIMIT,
    now: () => NOW,
  });
  const ttl = (name: string) => asReconciler(cache, collector.ttl)(`ns/${name}`, new AbortController().signal);
  const deletes = () => client.writes.map((write) => [write.verb, write.key, write.outcome]);
  return { cache, client, logger, collector, ttl, deletes };
}

describe('run-ttl', () => {
  test.each<[string, RunShape, number | undefined]>([
    ['a Run not finished (Running, with a TTL)', { phase: 'Running', ttlSeconds: 10 }, undefined],
    ['a finished Run without a TTL', { finishedAgoS: 3_600 }, undefined],
    ['a finished Run before its TTL', { finishedAgoS: 20, ttlSeconds: 50 }, 30_000],
  ])('%s is kept and nothing deleted (requeued at its TTL if it has one)', async (_name, shape, requeueAfterMs) => {
    const { ttl, deletes, logger } = harness([run('r', shape)]);

    await expect(ttl('r')).resolves.toEqual(requeueAfterMs === undefined ? undefined : { requeueAfterMs });

    expect(deletes()).toEqual([]);
    expect(logger.lines).toEqual([]);
  });

  test.each<[string, RunShape]>([
    ['at its TTL', { finishedAgoS: 50, ttlSeconds: 50 }],
    ['after its TTL', { phase: 'Failed', finishedAgoS: 90, ttlSeconds: 50 }],
  ])('a finished Run %s is deleted, preconditioned on what was decided from, in the background', async (_name, shape) => {
    const { ttl, client, logger } = harness([run('r', shape)]);

    await expect(ttl('r')).resolves.toBeUndefined();

    expect(client.writes).toEqual([
      {
        verb: 'delete',
        key: 'ns/r',
        body: { preconditions: { uid: 'uid-r', resourceVersion: '7' }, propagationPolicy: 'Background' },
        outcome: 'ok',
      },
    ]);
    expect(client.live('ns', 'r')).toBeUndefined();
    expect(logger.lines).toEqual([
      { level: 'debug', message: 'deleted finished Run', fields: { run: 'ns/r', phase: shape.phase ?? 'Succeeded' } },
    ]);
  });

  test.each(['NotFound', 'Conflict'] as const)('a deletion refused (%s) is no error and logs nothing', async (refusal) => {
    const { ttl, client, deletes, logger } = harness([run('r', { finishedAgoS: 90, ttlSeconds: 50 })]);
    client.refuse('delete', 'ns/r', refusal);

    await expect(ttl('r')).resolves.toBeUndefined();

    expect(deletes()).toEqual([['delete', 'ns/r', refusal]]);
    expect(logger.lines).toEqual([]);
  });

  test('a cached Run older than the live one is not deleted: the precondition answers Conflict', async () => {
    const { cache, ttl, deletes } = harness([run('r', { finishedAgoS: 90, ttlSeconds: 50 })]);
    cache.set({ ...run('r', { finishedAgoS: 90, ttlSeconds: 50 }), metadata: { ...run('r').metadata, resourceVersion: '6' } });

    await ttl('r');

    expect(deletes()).toEqual([['delete', 'ns/r', 'Conflict']]);
  });

  test('a Run being deleted or gone from the cache: nothing is deleted', async () => {
    const { ttl, deletes } = harness([run('going', { finishedAgoS: 90, ttlSeconds: 50, deleting: true })]);

    await expect(ttl('going')).resolves.toBeUndefined();
    await expect(ttl('absent')).resolves.toBeUndefined();

    expect(deletes()).toEqual([]);
  });
});

describe('run-history', () => {
  /** Finished Runs of python, r0 the oldest. */
  const finished = (count: number): Run[] =>
    Array.from({ length: count }, (_, index) => run(`r${String(index)}`, { finishedAgoS: 1_000 - index }));

  test.each([
    ['under the limit', 1],
    ['at the limit', HISTORY_LIMIT],
  ])('%s: nothing is deleted', async (_name, count) => {
    const { collector, deletes } = harness(finished(count));

    await expect(collector.reconcileHistory('ns/python')).resolves.toBeUndefined();

    expect(deletes()).toEqual([]);
  });

  test('over the limit: the oldest finished Runs beyond it are deleted, oldest first', async () => {
    const { collector, deletes, logger } = harness(finished(4));

    await expect(collector.reconcileHistory('ns/python')).resolves.toBeUndefined();

    expect(deletes()).toEqual([
      ['delete', 'ns/r0', 'ok'],
      ['delete', 'ns/r1', 'ok'],
    ]);
    expect(logger.messages('debug')).toEqual(['deleted finished Run', 'deleted finished Run']);
  });

  test('only finished Runs not being deleted of that Runtime count toward its limit', async () => {
    const { collector, deletes } = harness([
      ...finished(HISTORY_LIMIT),
      run('active', { phase: 'Running' }),
      run('going', { deleting: true }),
      run('other-runtime', { runtime: 'bash', finishedAgoS: 5_000 }),
    ]);

    await collector.reconcileHistory('ns/python');

    expect(deletes()).toEqual([]);
  });

  test.each(['NotFound', 'Conflict'] as const)('a deletion refused (%s) does not stop the others', async (refusal) => {
    const { client, collector, deletes, logger } = harness(finished(4));
    client.refuse('delete', 'ns/r0', refusal);

    await expect(collector.reconcileHistory('ns/python')).resolves.toBeUndefined();

    expect(deletes()).toEqual([
      ['delete', 'ns/r0', refusal],
      ['delete', 'ns/r1', 'ok'],
    ]);
    expect(logger.lines.map((line) => line.fields)).toEqual([{ run: 'ns/r1', phase: 'Succeeded' }]);
  });
});
