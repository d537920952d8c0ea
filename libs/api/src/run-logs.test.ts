import { RUNTIMED_LOG_MESSAGES, attemptsWithoutLogs, parseRuntimedLogLine, selectRunLogs } from './run-logs.ts';
import type { RunLogRecord } from './run-logs.ts';

const line = (fields: Record<string, unknown>): string => JSON.stringify({ level: 30, time: 1000, pid: 7, hostname: 'h', ...fields });

describe('parseRuntimedLogLine', () => {
  it.each<[string, string, RunLogRecord | undefined]>([
    [
      'a task output line',
      line({ runUID: 'u', attempt: 2, stream: 'stderr', line: 'oops', msg: RUNTIMED_LOG_MESSAGES.taskOutput }),
      { kind: 'output', uid: 'u', attempt: 2, timeMs: 1000, stream: 'stderr', line: 'oops', truncated: false },
    ],
    [
      'a line cut at the bound',
      line({ runUID: 'u', attempt: 1, stream: 'stdout', line: 'x', truncated: true, msg: 'task output' }),
      { kind: 'output', uid: 'u', attempt: 1, timeMs: 1000, stream: 'stdout', line: 'x', truncated: true },
    ],
    [
      'task started',
      line({ runUID: 'u', attempt: 1, pid: 42, msg: 'task started' }),
      { kind: 'started', uid: 'u', attempt: 1, timeMs: 1000, pid: 42 },
    ],
    [
      'an invocation served',
      line({ runUID: 'u', attempt: 1, invocationId: 'i', code: 'OK', route: 'local', durationMs: 3, msg: 'invocation served' }),
      { kind: 'invocation', uid: 'u', attempt: 1, timeMs: 1000, invocationId: 'i', code: 'OK', route: 'local', durationMs: 3 },
    ],
    [
      'an invocation refused before routing (no attempt)',
      line({ runUID: 'u', invocationId: 'i', code: 'Forbidden', route: 'refused', msg: 'invocation failed' }),
      {
        kind: 'invocation',
        uid: 'u',
        attempt: undefined,
        timeMs: 1000,
        invocationId: 'i',
        code: 'Forbidden',
        route: 'refused',
        durationMs: undefined,
      },
    ],
    ['another message', line({ runUID: 'u', attempt: 1, msg: 'claimed' }), undefined],
    ['no Run UID', line({ attempt: 1, line: 'x', msg: 'task output' }), undefined],
    ['output without a line', line({ runUID: 'u', attempt: 1, msg: 'task output' }), undefined],
    ['output without an attempt', line({ runUID: 'u', line: 'x', msg: 'task output' }), undefined],
    ['not JSON', 'plain text', undefined],
    ['broken JSON', '{"runUID":', undefined],
    ['a JSON array', '[1]', undefined],
  ])('%s', (_name, text, expected) => {
    expect(parseRuntimedLogLine(text)).toEqual(expected);
  });
});

describe('selectRunLogs and attemptsWithoutLogs', () => {
  const out = (uid: string, attempt: number, timeMs: number, text: string): RunLogRecord => ({
    kind: 'output',
    uid,
    attempt,
    timeMs,
    stream: 'stdout',
    line: text,
    truncated: false,
  });
  const invocation = (id: string, timeMs: number): RunLogRecord => ({
    kind: 'invocation',
    uid: 'u',
    attempt: 1,
    timeMs,
    invocationId: id,
    code: 'OK',
    route: 'local',
    durationMs: 1,
  });
  const records = [
    out('u', 2, 30, 'c'),
    out('other', 1, 5, 'x'),
    out('u', 1, 10, 'a'),
    out('u', 1, 10, 'b'),
    invocation('i1', 40),
    invocation('i2', 50),
  ];

  it.each<[string, Parameters<typeof selectRunLogs>[1], string[]]>([
    ['every record of the Run, by time, ties in log order', { uid: 'u' }, ['a', 'b', 'c', 'i1', 'i2']],
    ['one attempt', { uid: 'u', attempt: 2 }, ['c']],
    ['since a time', { uid: 'u', sinceMs: 30 }, ['c', 'i1', 'i2']],
    ['one invocation', { uid: 'u', invocationId: 'i2' }, ['i2']],
    ['another Run', { uid: 'none' }, []],
  ])('%s', (_name, selection, expected) => {
    expect(
      selectRunLogs(records, selection).map((r) => (r.kind === 'output' ? r.line : r.kind === 'invocation' ? r.invocationId : '?')),
    ).toEqual(expected);
  });

  it.each<[string, number, number | undefined, number[]]>([
    ['both attempts have logs', 2, undefined, []],
    ['attempt 3 has none (its Pod is gone)', 3, undefined, [3]],
    ['asked for one attempt that has none', 3, 3, [3]],
    ['asked for one attempt that has logs', 3, 1, []],
    ['an attempt past the last is not asked about', 2, 5, []],
    ['no attempt yet', 0, undefined, []],
  ])('%s', (_name, lastAttempt, only, expected) => {
    expect(attemptsWithoutLogs(records, 'u', lastAttempt, only)).toEqual(expected);
  });
});
