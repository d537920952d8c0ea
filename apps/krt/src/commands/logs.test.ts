import { Readable } from 'node:stream';
import type { Run, RunLogRecord, RunPhase } from '@kruntimes/api';
import type { CliIo } from './context.ts';
import { CUT_LINE_MARKER, RecordWriter, ShownRecords, lastStartedAttempt, writeRecords } from './logs.ts';

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

const line = (attempt: number, text: string, timeMs = 0): RunLogRecord => ({
  kind: 'output',
  uid: 'u',
  attempt,
  timeMs,
  stream: 'stdout',
  line: text,
  truncated: false,
});

describe('RecordWriter', () => {
  const capture = (): { written: { stdout: string; stderr: string }; writer: RecordWriter } => {
    const written = { stdout: '', stderr: '' };
    const io: CliIo = {
      stdout: { write: (text: string | Uint8Array) => (written.stdout += String(text)) },
      stderr: { write: (text: string) => (written.stderr += text) },
      stdin: Readable.from([]),
    };
    return { written, writer: new RecordWriter(io) };
  };

  it('followed one record at a time: no heading while one attempt is shown, one when a second attempt starts', () => {
    const { writer, written } = capture();
    writer.write([line(1, 'a')]);
    writer.write([line(1, 'b')]);
    writer.write([]);
    writer.write([line(2, 'c')]);
    writer.write([line(2, 'd')]);
    expect(written).toEqual({ stdout: 'a\nb\nc\nd\n', stderr: '== attempt 2 ==\n' });
  });

  it('what was read before the follow spans two attempts: headings from the start, and on for what follows', () => {
    const { writer, written } = capture();
    writer.write([line(1, 'a'), line(2, 'b')]);
    writer.write([line(2, 'c')]);
    writer.write([line(3, 'd')]);
    expect(written).toEqual({ stdout: 'a\nb\nc\nd\n', stderr: '== attempt 1 ==\n== attempt 2 ==\n== attempt 3 ==\n' });
  });
});

describe('ShownRecords', () => {
  const read = (shown: ShownRecords, log: readonly RunLogRecord[]): string[] => {
    const fresh = shown.reader();
    return log.filter((record) => fresh(record)).map((record) => (record.kind === 'output' ? record.line : record.kind));
  };

  it('the first read of a log shows all of it, the same line twice in one millisecond too', () => {
    expect(read(new ShownRecords(), [line(1, 'a', 5), line(1, 'a', 5), line(1, 'b', 6)])).toEqual(['a', 'a', 'b']);
  });

  it('a follow that replays a log read before shows only what was added since', () => {
    const shown = new ShownRecords();
    read(shown, [line(1, 'a', 5), line(1, 'a', 5)]);
    expect(read(shown, [line(1, 'a', 5), line(1, 'a', 5), line(1, 'a', 5), line(1, 'c', 7)])).toEqual(['a', 'c']);
  });

  it("the same log followed again (its container stopped) shows nothing twice; a restarted container's new log is all new", () => {
    const shown = new ShownRecords();
    const old = [line(1, 'a', 5), line(1, 'b', 6)];
    expect(read(shown, old)).toEqual(['a', 'b']);
    expect(read(shown, old)).toEqual([]);
    expect(read(shown, [line(2, 'a', 9), line(2, 'b', 10)])).toEqual(['a', 'b']);
  });
});
