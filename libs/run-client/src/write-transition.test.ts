import { ApiException } from '@kubernetes/client-node';
import type { Run, RunPhase, RunStatus } from '@kruntimes/api';
import { TransitionRefusedError } from '@kruntimes/run-state';
import type { RunEvent } from '@kruntimes/run-state';
import type { WriteResult } from './refusal.ts';
import { writeTransition } from './write-transition.ts';
import type { RunStatusWriter, TransitionWrite } from './write-transition.ts';

const NOW = '2026-06-01T12:00:00Z';
const BIND: RunEvent = { type: 'Bind', pod: 'pod-a', podUID: 'pod-uid-a' };

function makeRun(phase: RunPhase, resourceVersion: string): Run {
  return {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name: 'r', namespace: 'ns', uid: 'uid-1', resourceVersion },
    spec: { runtime: 'python', source: { inline: 'print(1)' }, mode: { task: {} } },
    status: { phase },
  };
}

/** A Run store with scripted live versions and write outcomes; it records what was written. */
function fakeRuns(live: (Run | undefined)[], outcomes: ('ok' | 'conflict')[]) {
  const written: { resourceVersion: string | undefined; status: RunStatus }[] = [];
  let reads = 0;
  const runs: RunStatusWriter = {
    get: () => Promise.resolve(live[reads++]),
    replaceStatus: (run, status): Promise<WriteResult<Run>> => {
      const outcome = outcomes[written.length];
      written.push({ resourceVersion: run.metadata.resourceVersion, status: status as RunStatus });
      if (outcome === 'conflict')
        return Promise.resolve({ ok: false, reason: 'Conflict', error: new ApiException<unknown>(409, 'Conflict', {}, {}) });
      return Promise.resolve({ ok: true, object: { ...(run as Run), status: status as RunStatus } });
    },
  };
  return { runs, written, reads: () => reads };
}

const scheduler: TransitionWrite = { writer: 'scheduler', now: () => NOW };

describe('writeTransition', () => {
  test('writes the state machine’s status on the version given, fenced on its resourceVersion', async () => {
    const { runs, written, reads } = fakeRuns([], ['ok']);
    const result = await writeTransition(runs, makeRun('Pending', '7'), BIND, scheduler);
    expect(result.ok).toBe(true);
    expect(reads()).toBe(0);
    expect(written.map((w) => w.resourceVersion)).toEqual(['7']);
    expect(written[0]?.status).toMatchObject({ assignedPod: 'pod-a', assignedPodUID: 'pod-uid-a' });
  });

  const refusals: [string, Run, TransitionWrite<string>, (error: unknown) => boolean][] = [
    ['the state machine refuses', makeRun('Succeeded', '7'), scheduler, (error) => error instanceof TransitionRefusedError],
    ['the caller’s check refuses', makeRun('Pending', '7'), { ...scheduler, check: () => 'not mine' }, (error) => error === 'not mine'],
  ];
  test.each(refusals)('Refused when %s, and nothing written', async (_name, run, options, isExpected) => {
    const { runs, written } = fakeRuns([], []);
    const result = await writeTransition(runs, run, BIND, options);
    expect(!result.ok && result.reason === 'Refused' && isExpected(result.error)).toBe(true);
    expect(written).toEqual([]);
  });

  test('by key: reads the live Run; gone is NotFound', async () => {
    const { runs, written } = fakeRuns([undefined], []);
    expect(await writeTransition(runs, { namespace: 'ns', name: 'r' }, BIND, scheduler)).toEqual({ ok: false, reason: 'NotFound' });
    expect(written).toEqual([]);
  });

  test('a Conflict with retries decides again on the live Run, with a new time and report number', async () => {
    const { runs, written, reads } = fakeRuns([makeRun('Pending', '8')], ['conflict', 'ok']);
    const times = ['2026-06-01T12:00:00Z', '2026-06-01T12:00:01Z'];
    const seen: string[] = [];
    let conflicts = 0;
    const result = await writeTransition(runs, { namespace: 'ns', name: 'r', assumed: makeRun('Pending', '7') }, BIND, {
      writer: 'scheduler',
      now: () => times[seen.length] ?? NOW,
      beforeWrite: (run) => seen.push(run.metadata.resourceVersion ?? ''),
      retries: 1,
      onConflict: () => (conflicts += 1),
    });
    expect(result.ok).toBe(true);
    expect(reads()).toBe(1);
    expect(conflicts).toBe(1);
    expect(seen).toEqual(['7', '8']);
    expect(written.map((w) => w.resourceVersion)).toEqual(['7', '8']);
  });

  test('Conflict returned when no retries are left', async () => {
    const { runs } = fakeRuns([], ['conflict']);
    const result = await writeTransition(runs, makeRun('Pending', '7'), BIND, scheduler);
    expect(result).toMatchObject({ ok: false, reason: 'Conflict' });
  });

  test('the report number is asked for on each version decided on', async () => {
    const { runs, written } = fakeRuns([], ['ok']);
    const bound = {
      ...makeRun('Scheduled', '7'),
      status: { phase: 'Scheduled' as const, assignedPod: 'pod-a', assignedPodUID: 'pod-uid-a', attempt: 1 },
    };
    const result = await writeTransition(
      runs,
      bound,
      { type: 'Claim' },
      {
        writer: 'runtimed',
        now: () => NOW,
        sequence: () => 3,
      },
    );
    expect(result.ok).toBe(true);
    expect(written[0]?.status.reportSequence).toBe(3);
  });
});
