import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BOUNDS, RUN_REASONS } from '@kruntimes/api';
import { runtimeServerV1 } from '@kruntimes/proto';
import {
  MAX_OUTCOME_RECORD_BYTES,
  OutcomeRecordUnreadableError,
  OutcomeRecords,
  decodeOutcomeRecord,
  encodeOutcomeRecord,
} from './outcome-record.ts';
import type { OutcomeRecord } from './outcome-record.ts';

const UID = '33333333-3333-4333-8333-333333333333';
const { ExitReason } = runtimeServerV1;

const exited = runtimeServerV1.ExecutionExited.create({
  reason: ExitReason.EXIT_REASON_COMPLETED,
  exitCode: 0,
  outputs: { answer: '42', big: 'x'.repeat(BOUNDS.outputValueBytes) },
  manifest: [{ artifactId: 'report', sha256: 'a'.repeat(64), size: 12, mediaType: 'text/plain' }],
  time: new Date('2026-12-02T12:00:00Z'),
});

const first: OutcomeRecord = { uid: UID, attempt: 1, end: { type: 'exited', exited } };

const records: [string, OutcomeRecord][] = [
  ['an exit with outputs and a manifest', first],
  ['an interrupted attempt', { uid: UID, attempt: 2, end: { type: 'interrupted', message: 'lost the execution: gone' } }],
  [
    'an attempt interrupted by the death of the Runtime Server',
    { uid: UID, attempt: 2, end: { type: 'interrupted', message: 'lost the execution: restarted', reason: RUN_REASONS.runtimeServerLost } },
  ],
  [
    'a continuation whose checkpoint is missing',
    {
      uid: UID,
      attempt: 3,
      end: { type: 'resumeFailed', load: { type: 'failed', reason: RUN_REASONS.artifactMissing, message: 'not in the store' } },
    },
  ],
  [
    'a continuation whose store could not be read',
    { uid: UID, attempt: 4, end: { type: 'resumeFailed', load: { type: 'interrupted', message: 'timed out' } } },
  ],
];

test.each(records)('round trip: %s', (_name, record) => {
  expect(decodeOutcomeRecord(encodeOutcomeRecord(record), record.uid, record.attempt)).toEqual(record);
});

test('messages are bounded like status messages; the record stays far under its bound with every output at its bound', () => {
  const long = 'm'.repeat(BOUNDS.messageBytes * 4);
  const outputs = Object.fromEntries(
    Array.from({ length: BOUNDS.outputCount }, (_, i) => [
      `k${String(i)}`.padEnd(BOUNDS.outputKeyBytes, 'k'),
      'v'.repeat(BOUNDS.outputValueBytes),
    ]),
  );
  const text = encodeOutcomeRecord({
    uid: UID,
    attempt: 1,
    end: { type: 'exited', exited: { ...exited, outputs, message: long, outputsError: long } },
  });
  const decoded = decodeOutcomeRecord(text, UID, 1);
  if (decoded.end.type !== 'exited') throw new Error('not an exit');
  expect(Buffer.byteLength(decoded.end.exited.message)).toBeLessThanOrEqual(BOUNDS.messageBytes);
  expect(Buffer.byteLength(decoded.end.exited.outputsError)).toBeLessThanOrEqual(BOUNDS.messageBytes);
  expect(decoded.end.exited.outputs).toEqual(outputs);
  expect(Buffer.byteLength(text)).toBeLessThan(150 * 1024);
  const interrupted = decodeOutcomeRecord(
    encodeOutcomeRecord({ uid: UID, attempt: 1, end: { type: 'interrupted', message: long } }),
    UID,
    1,
  );
  expect(interrupted.end.type === 'interrupted' && Buffer.byteLength(interrupted.end.message)).toBeLessThanOrEqual(BOUNDS.messageBytes);
});

const stored = (end: unknown, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ version: 1, uid: UID, attempt: 1, end, ...extra });

test.each([
  ['truncated JSON', stored({ type: 'interrupted', message: 'x' }).slice(0, 20), /not JSON/],
  ['not an object', '[]', /not a JSON object/],
  ['another version', stored({ type: 'interrupted', message: 'x' }, { version: 2 }), /version 2/],
  ['another attempt', stored({ type: 'interrupted', message: 'x' }, { attempt: 2 }), /attempt 2/],
  ['another Run', stored({ type: 'interrupted', message: 'x' }, { uid: 'other' }), /names Run "other"/],
  ['no end', stored(undefined), /no end/],
  ['an unknown end', stored({ type: 'teleported' }), /unknown end type "teleported"/],
  ['an exit that is not base64', stored({ type: 'exited', exited: '%%%' }), /not base64/],
  [
    'an exit that is not an ExecutionExited',
    stored({ type: 'exited', exited: Buffer.from([0x0a, 0xff]).toString('base64') }),
    /not an ExecutionExited/,
  ],
  ['an interrupted end without message', stored({ type: 'interrupted' }), /end.message/],
  ['an interrupted end of another reason', stored({ type: 'interrupted', message: 'x', reason: 'Other' }), /end.reason "Other"/],
  [
    'a resume end of another reason',
    stored({ type: 'resumeFailed', load: { type: 'failed', reason: 'Other', message: 'x' } }),
    /not a failed resume/,
  ],
  ['over the bound', ' '.repeat(MAX_OUTCOME_RECORD_BYTES + 1), /over/],
])('unreadable: %s', (_name, text, message) => {
  const read = (): unknown => decodeOutcomeRecord(text, UID, 1);
  expect(read).toThrow(OutcomeRecordUnreadableError);
  expect(read).toThrow(message);
});

describe('on disk', () => {
  let root: string;
  const dir = (): Promise<string> => Promise.resolve(join(root, '.outcomes'));
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'outcomes-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  test('save, read, remove; a new instance (a restarted runtimed) finds what the last one saved', async () => {
    const outcomes = new OutcomeRecords(dir);
    expect(await outcomes.attempts(UID)).toEqual([]);
    expect(await outcomes.read(UID, 1)).toBeUndefined();
    await outcomes.save(first);
    await outcomes.save(first);
    expect(await outcomes.attempts(UID)).toEqual([1]);
    expect(await readdir(await dir())).toEqual([`${UID}.1.json`]);
    // Neither readable nor writable by a Run: the directory and the record are runtimed's alone.
    expect((await stat(await dir())).mode & 0o777).toBe(0o700);
    expect((await stat(join(await dir(), `${UID}.1.json`))).mode & 0o777).toBe(0o600);

    const restarted = new OutcomeRecords(dir);
    expect(await restarted.uids()).toEqual([UID]);
    expect(await restarted.read(UID, 1)).toEqual(first);
    await restarted.remove(UID, 1);
    await restarted.remove(UID, 1);
    expect(await restarted.attempts(UID)).toEqual([]);
    expect(await new OutcomeRecords(dir).uids()).toEqual([]);
  });

  test('a corrupt record is an error, not an absent one, and stays until it is replaced or removed', async () => {
    const outcomes = new OutcomeRecords(dir);
    await outcomes.save(first);
    await writeFile(join(await dir(), `${UID}.1.json`), '{"version":1,');
    await expect(outcomes.read(UID, 1)).rejects.toThrow(OutcomeRecordUnreadableError);
    expect(await outcomes.attempts(UID)).toEqual([1]);
    await writeFile(join(await dir(), `${UID}.1.json`), ' '.repeat(MAX_OUTCOME_RECORD_BYTES + 1));
    await expect(outcomes.read(UID, 1)).rejects.toThrow(/unreadable/);
  });

  test('a save cut short leaves only its temporary file, removed on the next start; other names are not records', async () => {
    await new OutcomeRecords(dir).save(first);
    await writeFile(join(await dir(), `${UID}.2.json.tmp`), '{');
    await writeFile(join(await dir(), 'README'), 'x');
    const restarted = new OutcomeRecords(dir);
    expect(await restarted.attempts(UID)).toEqual([1]);
    expect((await readdir(await dir())).sort()).toEqual([`${UID}.1.json`, 'README']);
  });

  test('a path is made only from a UID and an attempt number', async () => {
    const outcomes = new OutcomeRecords(dir);
    await expect(outcomes.read('../x', 1)).rejects.toThrow(/no outcome record/);
    await expect(outcomes.save({ ...first, attempt: 0 })).rejects.toThrow(/no outcome record/);
  });
});
