import { Readable } from 'node:stream';
import type { Run, RunLogRecord, RunPhase } from '@kruntimes/api';
import type { CliIo } from './context.ts';
import { CUT_LINE_MARKER, lastStartedAttempt, writeRecords } from './logs.ts';

const run = (phase: RunPhase | undefined, attempt?: number): Pick<Run, 'status'> => ({
  status: { ...(phase === undefined ? {} : { phase }), ...(attempt === undefined ? {} : { attempt }) },
});

test.each<[string, Pick<Run, 'status'>, number]>([
  ['no status yet', { status: {} }, -1],
  ['queued for attempt 2: attempt 1 is the last that ran', run('Pending', 2), 1],
  ['bound, not claimed', run('Scheduled', 1), 0],
  ['running', run('Running', 3), 3],
  ['a Ready function', run('Ready', 1), 1],
  ['waiting for input', run('WaitingInput', 2), 2],
  ['succeeded', run('Succeeded', 1), 1],
  ['failed', run('Failed', 2), 2],
  ['timed out', run('Timeout', 1), 1],
  ['cancelled: the last attempt may not have started', run('Cancelled', 2), 1],
  ['interrupted', run('Interrupted', 3), 2],
])('lastStartedAttempt: %s', (_name, value, attempt) => {
  expect(lastStartedAttempt(value)).toBe(attempt);
});

describe('writeRecords', () => {
  const out = (attempt: number, stream: 'stdout' | 'stderr', line: string, truncated = false): RunLogRecord => ({
    kind: 'output',
    uid: 'u',
    attempt,
    timeMs: 0,
    stream,
    line,
    truncated,
  });
  const capture = (): { written: { stdout: string; stderr: string }; io: CliIo } => {
    const written = { stdout: '', stderr: '' };
    const io: CliIo = {
      stdout: { write: (text: string | Uint8Array) => (written.stdout += String(text)) },
      stderr: { write: (text: string) => (written.stderr += text) },
      stdin: Readable.from([]),
    };
    return { written, io };
  };

  it('one attempt: the lines on their own streams, no heading; a cut line says so', () => {
    const { io, written } = capture();
    writeRecords(io, [out(1, 'stdout', 'a'), out(1, 'stderr', 'b'), out(1, 'stdout', 'c', true)]);
    expect(written).toEqual({ stdout: `a\nc${CUT_LINE_MARKER}\n`, stderr: 'b\n' });
  });

  it('two attempts: a heading on stderr before each', () => {
    const { io, written } = capture();
    writeRecords(io, [out(1, 'stdout', 'a'), out(2, 'stdout', 'b')]);
    expect(written).toEqual({ stdout: 'a\nb\n', stderr: '== attempt 1 ==\n== attempt 2 ==\n' });
  });

  it('an invocation is one line on stdout', () => {
    const { io, written } = capture();
    writeRecords(io, [
      {
        kind: 'invocation',
        uid: 'u',
        attempt: 1,
        timeMs: Date.UTC(2026, 0, 2, 3, 4, 5),
        invocationId: 'i-1',
        code: 'OK',
        route: 'local',
        durationMs: 4,
      },
      { kind: 'started', uid: 'u', attempt: 1, timeMs: 0 },
    ]);
    expect(written).toEqual({ stdout: '2026-01-02T03:04:05.000Z i-1 OK 4ms attempt 1 local\n', stderr: '' });
  });
});
