import { ExecutionRecord } from './execution-record.ts';
import type { ExecutionEnding } from './execution-record.ts';

const RUN = '2c24c1f0-9f8f-4f80-82d5-3dd16a12d1e6';
const OTHER_RUN = '7d1e6a55-0c9e-4a3e-9c57-1d1f0e0b2a11';

const ending = (exitCode: number, time = 0): ExecutionEnding => ({
  reason: 'completed',
  exitCode,
  signal: '',
  outputs: { n: String(exitCode) },
  outputsError: '',
  message: '',
  manifest: [],
  time,
});

function fixture(capacity = 3, retentionMs = 10_000) {
  let now = 1_000;
  const record = new ExecutionRecord({ clock: () => now, capacity, retentionMs });
  return {
    record,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('ExecutionRecord', () => {
  it('knows nothing of an attempt it never saw', () => {
    expect(fixture().record.get(RUN, 1)).toEqual({ state: 'unknown' });
  });

  it('reports a started execution as running, then its ending exactly', () => {
    const { record } = fixture();
    record.started(RUN, 1, `${RUN}/1`, 4242, 900);
    expect(record.get(RUN, 1)).toEqual({ state: 'running', executionId: `${RUN}/1`, pid: 4242, startedAt: 900 });
    record.ended(RUN, 1, `${RUN}/1`, ending(7, 950));
    expect(record.get(RUN, 1)).toEqual({
      state: 'exited',
      executionId: `${RUN}/1`,
      started: { pid: 4242, startedAt: 900 },
      ending: ending(7, 950),
    });
  });

  it('keys by Run UID and attempt: other attempts and Runs stay apart', () => {
    const { record } = fixture();
    record.started(RUN, 1, 'a', 1, 0);
    record.ended(RUN, 1, 'a', ending(1));
    record.started(RUN, 2, 'b', 2, 0);
    record.ended(OTHER_RUN, 1, 'c', ending(3));
    expect(record.get(RUN, 1)).toMatchObject({ state: 'exited', ending: { exitCode: 1 } });
    expect(record.get(RUN, 2)).toMatchObject({ state: 'running', pid: 2 });
    expect(record.get(OTHER_RUN, 1)).toMatchObject({ state: 'exited', started: undefined, ending: { exitCode: 3 } });
    expect(record.get(OTHER_RUN, 2)).toEqual({ state: 'unknown' });
  });

  it('records an ending that never started a process (start_failed)', () => {
    const { record } = fixture();
    record.ended(RUN, 1, 'x', { ...ending(-1), reason: 'start_failed', message: 'no such file' });
    expect(record.get(RUN, 1)).toMatchObject({ state: 'exited', started: undefined, ending: { reason: 'start_failed' } });
  });

  it('keeps at most `capacity` endings, forgetting the oldest first; running ones are never forgotten', () => {
    const { record } = fixture(2);
    record.started(RUN, 9, 'long', 99, 0);
    for (let attempt = 1; attempt <= 4; attempt += 1) record.ended(RUN, attempt, `e${String(attempt)}`, ending(attempt));
    expect(record.endings).toBe(2);
    expect(record.get(RUN, 1)).toEqual({ state: 'unknown' });
    expect(record.get(RUN, 2)).toEqual({ state: 'unknown' });
    expect(record.get(RUN, 3)).toMatchObject({ state: 'exited', ending: { exitCode: 3 } });
    expect(record.get(RUN, 4)).toMatchObject({ state: 'exited', ending: { exitCode: 4 } });
    expect(record.get(RUN, 9)).toMatchObject({ state: 'running', pid: 99 });
  });

  it('forgets endings older than the retention', () => {
    const { record, advance } = fixture(10, 1_000);
    record.ended(RUN, 1, 'old', ending(1));
    advance(600);
    record.ended(RUN, 2, 'newer', ending(2));
    advance(500);
    expect(record.get(RUN, 1)).toEqual({ state: 'unknown' });
    expect(record.get(RUN, 2)).toMatchObject({ state: 'exited' });
    advance(600);
    expect(record.get(RUN, 2)).toEqual({ state: 'unknown' });
    expect(record.endings).toBe(0);
  });

  it('a new execution of the same attempt replaces the old record', () => {
    const { record } = fixture();
    record.ended(RUN, 1, 'first', ending(1));
    record.started(RUN, 1, 'second', 5, 0);
    expect(record.get(RUN, 1)).toMatchObject({ state: 'running', executionId: 'second' });
    record.ended(RUN, 1, 'second', ending(0));
    expect(record.get(RUN, 1)).toMatchObject({ state: 'exited', executionId: 'second', started: { pid: 5 }, ending: { exitCode: 0 } });
  });

  it('an ending of another execution under the same attempt does not end the running one', () => {
    const { record } = fixture();
    record.started(RUN, 1, 'running', 5, 0);
    record.ended(RUN, 1, 'rejected', { ...ending(-1), reason: 'start_failed' });
    expect(record.get(RUN, 1)).toMatchObject({ state: 'running', executionId: 'running' });
  });
});
