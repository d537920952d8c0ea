import {
  chooseLogInstance,
  cutToLimit,
  formatCriLine,
  formatTimeNs,
  parseCriLine,
  parseLogQuery,
  parseTimeNs,
  renderRecord,
  selectRecords,
  splitRecords,
} from './container-logs.ts';
import type { ContainerLogState, CriRecord, LogQuery } from './container-logs.ts';

const T0 = 1_780_000_000_123_456_789n; // 2026-05-28T20:26:40.123456789Z
const S = 1_000_000_000n;

test.each([
  [T0, '2026-05-28T20:26:40.123456789Z'],
  [0n, '1970-01-01T00:00:00.000000000Z'],
  [1_000_000n, '1970-01-01T00:00:00.001000000Z'],
])('formatTimeNs(%s) = %s', (ns, text) => {
  expect(formatTimeNs(ns)).toBe(text);
  expect(parseTimeNs(text)).toBe(ns);
});

test.each([
  ['2026-05-28T20:26:40Z', 1_780_000_000n * S],
  ['2026-05-28T20:26:40.5Z', 1_780_000_000n * S + S / 2n],
  ['2026-05-28T22:26:40.000000001+02:00', 1_780_000_000n * S + 1n],
  ['2026-05-28 20:26:40Z', undefined],
  ['2026-05-28T20:26:40', undefined],
  ['2026-05-28T20:26:40.1234567891Z', undefined],
  ['yesterday', undefined],
])('parseTimeNs(%s)', (text, ns) => {
  expect(parseTimeNs(text)).toBe(ns);
});

test.each<[string, CriRecord | undefined]>([
  ['2026-05-28T20:26:40.123456789Z stdout F hello world', { timeNs: T0, stream: 'stdout', partial: false, content: 'hello world' }],
  ['2026-05-28T20:26:40.123456789Z stderr P part', { timeNs: T0, stream: 'stderr', partial: true, content: 'part' }],
  ['2026-05-28T20:26:40.123456789Z stdout F ', { timeNs: T0, stream: 'stdout', partial: false, content: '' }],
  ['2026-05-28T20:26:40.123456789Z stdout F', { timeNs: T0, stream: 'stdout', partial: false, content: '' }],
  ['2026-05-28T20:26:40.123456789Z stdout F  two spaces', { timeNs: T0, stream: 'stdout', partial: false, content: ' two spaces' }],
  // Old CRI logs have no tag: the rest is the content of a full line.
  ['2026-05-28T20:26:40.123456789Z stdout Fast', { timeNs: T0, stream: 'stdout', partial: false, content: 'Fast' }],
  ['2026-05-28T20:26:40.123456789Z stdin F x', undefined],
  ['not a time stdout F x', undefined],
  ['', undefined],
])('parseCriLine(%j)', (line, record) => {
  expect(parseCriLine(line)).toEqual(record);
});

test('formatCriLine and parseCriLine round-trip', () => {
  const record: CriRecord = { timeNs: T0, stream: 'stderr', partial: true, content: 'a b  c' };
  const line = formatCriLine(record);
  expect(line).toBe('2026-05-28T20:26:40.123456789Z stderr P a b  c\n');
  expect(parseCriLine(line.slice(0, -1))).toEqual(record);
});

const b = (text: string): Buffer => Buffer.from(text);
const split = (pending: string, chunk: string, end = false, max = 8) => {
  const result = splitRecords(b(pending), b(chunk), end, max);
  return { records: result.records.map((r) => [r.content.toString(), r.partial]), pending: result.pending.toString() };
};

test.each<[string, string, boolean, { records: [string, boolean][]; pending: string }]>([
  [
    '',
    'a\nb\n',
    false,
    {
      records: [
        ['a', false],
        ['b', false],
      ],
      pending: '',
    },
  ],
  ['', 'a\nbc', false, { records: [['a', false]], pending: 'bc' }],
  ['bc', 'd\n', false, { records: [['bcd', false]], pending: '' }],
  [
    '',
    '\n\n',
    false,
    {
      records: [
        ['', false],
        ['', false],
      ],
      pending: '',
    },
  ],
  ['', 'tail', true, { records: [['tail', false]], pending: '' }],
  ['', '', true, { records: [], pending: '' }],
  // Longer than the maximum (8 here): partial records, then the rest.
  [
    '',
    '0123456789abcdefXY\n',
    false,
    {
      records: [
        ['01234567', true],
        ['89abcdef', true],
        ['XY', false],
      ],
      pending: '',
    },
  ],
  ['', '01234567\n', false, { records: [['01234567', false]], pending: '' }],
  ['', '012345678', false, { records: [['01234567', true]], pending: '8' }],
])('splitRecords(%j, %j, end=%s)', (pending, chunk, end, expected) => {
  expect(split(pending, chunk, end)).toEqual(expected);
});

test('splitRecords never cuts a UTF-8 character', () => {
  // "aaaaaaa" then "é" (2 bytes) straddles the 8-byte cut.
  const { records, pending } = splitRecords(b(''), b('aaaaaaaé\n'), false, 8);
  expect(records.map((r) => [r.content.toString(), r.partial])).toEqual([
    ['aaaaaaa', true],
    ['é', false],
  ]);
  expect(pending.length).toBe(0);
});

const NOW = 1_780_000_100n * S;
const base: LogQuery = { follow: false, previous: false, timestamps: false, stream: 'All' };

test.each<[string, LogQuery | { error: string }]>([
  ['', base],
  ['follow=true&previous=1&timestamps=T', { ...base, follow: true, previous: true, timestamps: true }],
  ['follow=false', base],
  ['follow', { ...base, follow: true }],
  ['tailLines=10', { ...base, tailLines: 10 }],
  ['tailLines=0', { ...base, tailLines: 0 }],
  ['tail=5', { ...base, tailLines: 5 }],
  ['tail=all', base],
  ['tail=5&tailLines=7', { ...base, tailLines: 7 }],
  ['sinceSeconds=30', { ...base, sinceNs: NOW - 30n * S }],
  ['sinceTime=2026-05-28T20:26:40Z', { ...base, sinceNs: 1_780_000_000n * S }],
  ['limitBytes=100', { ...base, limitBytes: 100 }],
  ['stream=Stderr', { ...base, stream: 'Stderr' }],
  ['follow=yes', { error: '{"message": "Unable to decode query."}' }],
  ['tailLines=x', { error: '{"message": "Unable to decode query."}' }],
  ['sinceTime=today', { error: '{"message": "Unable to decode query."}' }],
  ['stream=stdin', { error: '{"message": "Unable to decode query."}' }],
  ['tailLines=-1', { error: '{"message": "Invalid request."}' }],
  ['sinceSeconds=0', { error: '{"message": "Invalid request."}' }],
  ['limitBytes=0', { error: '{"message": "Invalid request."}' }],
  ['sinceSeconds=5&sinceTime=2026-05-28T20:26:40Z', { error: '{"message": "Invalid request."}' }],
])('parseLogQuery(%j)', (query, expected) => {
  expect(parseLogQuery(new URLSearchParams(query), NOW)).toEqual(expected);
});

const line = (seconds: bigint, stream: 'stdout' | 'stderr', content: string, partial = false): string =>
  formatCriLine({ timeNs: 1_780_000_000n * S + seconds * S, stream, partial, content });
const FILE = [
  line(0n, 'stdout', 'one'),
  line(1n, 'stderr', 'two'),
  line(2n, 'stdout', 'thr', true),
  line(2n, 'stdout', 'ee'),
  line(3n, 'stdout', 'four'),
  'garbage that is not a CRI line\n',
  '2026-05-28T20:26:45.000000000Z stdout F incompl',
].join('');

test.each<[string, Pick<LogQuery, 'tailLines' | 'sinceNs' | 'stream'>, string[]]>([
  ['everything complete', { stream: 'All' }, ['one', 'two', 'thr', 'ee', 'four']],
  ['tail counts every line of the file', { stream: 'All', tailLines: 3 }, ['ee', 'four']],
  ['tail 0', { stream: 'All', tailLines: 0 }, []],
  ['tail beyond the file', { stream: 'All', tailLines: 100 }, ['one', 'two', 'thr', 'ee', 'four']],
  ['since', { stream: 'All', sinceNs: 1_780_000_002n * S }, ['thr', 'ee', 'four']],
  ['since between two lines', { stream: 'All', sinceNs: 1_780_000_000n * S + 1n }, ['two', 'thr', 'ee', 'four']],
  ['stdout only', { stream: 'Stdout' }, ['one', 'thr', 'ee', 'four']],
  ['stderr only', { stream: 'Stderr' }, ['two']],
  ['tail then since', { stream: 'All', tailLines: 5, sinceNs: 1_780_000_002n * S }, ['thr', 'ee', 'four']],
])('selectRecords: %s', (_name, query, contents) => {
  expect(selectRecords(FILE, query).map((r) => r.content)).toEqual(contents);
});

test('selectRecords of an empty or unfinished file', () => {
  expect(selectRecords('', { stream: 'All' })).toEqual([]);
  expect(selectRecords('2026-05-28T20:26:45.000000000Z stdout F no newline yet', { stream: 'All' })).toEqual([]);
});

test.each<[CriRecord, boolean, string]>([
  [{ timeNs: T0, stream: 'stdout', partial: false, content: 'hi' }, false, 'hi\n'],
  [{ timeNs: T0, stream: 'stdout', partial: false, content: 'hi' }, true, '2026-05-28T20:26:40.123456789Z hi\n'],
  [{ timeNs: T0, stream: 'stdout', partial: true, content: 'hi' }, false, 'hi'],
])('renderRecord(%j, timestamps=%s)', (record, timestamps, text) => {
  expect(renderRecord(record, timestamps)).toBe(text);
});

test.each<[string, number | undefined, string]>([
  ['hello\n', undefined, 'hello\n'],
  ['hello\n', 100, 'hello\n'],
  ['hello\n', 6, 'hello\n'],
  ['hello\n', 3, 'hel'],
  ['hello\n', 0, ''],
])('cutToLimit(%j, %s)', (text, remaining, expected) => {
  expect(cutToLimit(b(text), remaining).toString()).toBe(expected);
});

const msg = (text: string) => ({ error: text });
test.each<[string, ContainerLogState, boolean, { instance: number } | { error: string }]>([
  ['running', { state: 'running', instance: 0 }, false, { instance: 0 }],
  ['running after restarts', { state: 'running', instance: 3, lastTerminatedInstance: 2 }, false, { instance: 3 }],
  ['previous of a restarted one', { state: 'running', instance: 3, lastTerminatedInstance: 2 }, true, { instance: 2 }],
  ['previous without a restart', { state: 'running', instance: 0 }, true, msg('previous terminated container "c" in pod "p" not found')],
  ['terminated, not restarted', { state: 'terminated', instance: 0 }, false, { instance: 0 }],
  [
    'in back-off: the last terminated one',
    { state: 'waiting', waitingReason: 'CrashLoopBackOff', lastTerminatedInstance: 4 },
    false,
    { instance: 4 },
  ],
  ['in back-off, previous', { state: 'waiting', waitingReason: 'CrashLoopBackOff', lastTerminatedInstance: 4 }, true, { instance: 4 }],
  [
    'never started',
    { state: 'waiting', waitingReason: 'ContainerCreating' },
    false,
    msg('container "c" in pod "p" is waiting to start: ContainerCreating'),
  ],
  [
    'image without a command',
    { state: 'waiting', waitingReason: 'ErrImagePull' },
    false,
    msg(`container "c" in pod "p" is waiting to start: image can't be pulled`),
  ],
  [
    'terminated without a start (unrecognized)',
    { state: 'terminated' },
    false,
    msg('container "c" in pod "p" is waiting to start - no logs yet'),
  ],
])('chooseLogInstance: %s', (_name, status, previous, expected) => {
  expect(chooseLogInstance('c', 'p', status, previous)).toEqual(expected);
});
