import { parseCron } from './cron.ts';
import type { Cron } from './cron.ts';
import { dueTimes, instantsOf, nextScheduledTime, timeZoneProblem, wallTime } from './zoned-time.ts';

function cron(expression: string): Cron {
  const result = parseCron(expression);
  if (!result.ok) throw new Error(result.message);
  return result.cron;
}

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());

/** The next `count` scheduled instants after `after`, as UTC ISO strings. */
function nextTimes(expression: string, zone: string, after: string, count: number): (string | undefined)[] {
  const times: (string | undefined)[] = [];
  let cursor = at(after);
  for (let i = 0; i < count; i += 1) {
    const next = nextScheduledTime(cron(expression), zone, cursor);
    times.push(iso(next));
    if (next === undefined) break;
    cursor = next;
  }
  return times;
}

// [what, cron, zone, after (UTC), the next instants (UTC)]
const table: [string, string, string, string, string[]][] = [
  // Europe/Berlin 2026: 29 March 02:00 CET -> 03:00 CEST; 25 October 03:00 CEST -> 02:00 CET.
  [
    'Berlin 2026 spring gap: 02:30 on 29 March skipped',
    '30 2 * * *',
    'Europe/Berlin',
    '2026-03-28T12:00:00Z',
    ['2026-03-30T00:30:00.000Z'],
  ],
  [
    'Berlin 2026 spring: 01:59 and 03:00 exist',
    '59 1,3 * * *',
    'Europe/Berlin',
    '2026-03-28T23:00:00Z',
    ['2026-03-29T00:59:00.000Z', '2026-03-29T01:59:00.000Z'],
  ],
  [
    'Berlin 2026 spring: 03:00 is the first minute after the gap',
    '0 3 29 3 *',
    'Europe/Berlin',
    '2026-03-28T12:00:00Z',
    ['2026-03-29T01:00:00.000Z'],
  ],
  [
    'Berlin 2026 autumn repeat: 02:30 once, at its first occurrence',
    '30 2 * * *',
    'Europe/Berlin',
    '2026-10-24T12:00:00Z',
    ['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z'],
  ],
  // Europe/Berlin 2027: 28 March and 31 October.
  ['Berlin 2027 spring gap', '30 2 * * *', 'Europe/Berlin', '2027-03-27T12:00:00Z', ['2027-03-29T00:30:00.000Z']],
  [
    'Berlin 2027 autumn repeat',
    '30 2 * * *',
    'Europe/Berlin',
    '2027-10-30T12:00:00Z',
    ['2027-10-31T00:30:00.000Z', '2027-11-01T01:30:00.000Z'],
  ],
  // America/New_York 2026: 8 March 02:00 EST -> 03:00 EDT; 1 November 02:00 EDT -> 01:00 EST.
  [
    'New York 2026 spring gap: 02:30 on 8 March skipped',
    '30 2 * * *',
    'America/New_York',
    '2026-03-07T12:00:00Z',
    ['2026-03-09T06:30:00.000Z'],
  ],
  [
    'New York 2026 autumn repeat: 01:30 once',
    '30 1 * * *',
    'America/New_York',
    '2026-10-31T12:00:00Z',
    ['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z'],
  ],
  [
    'New York 2026 */15 across the repeated hour: each quarter once, then 02:00 EST',
    '*/15 * * * *',
    'America/New_York',
    '2026-11-01T04:50:00Z',
    [
      '2026-11-01T05:00:00.000Z',
      '2026-11-01T05:15:00.000Z',
      '2026-11-01T05:30:00.000Z',
      '2026-11-01T05:45:00.000Z',
      '2026-11-01T07:00:00.000Z',
      '2026-11-01T07:15:00.000Z',
    ],
  ],
  [
    'New York 2026 */15 resumed inside the second 01:xx: nothing repeats',
    '*/15 * * * *',
    'America/New_York',
    '2026-11-01T06:20:00Z',
    ['2026-11-01T07:00:00.000Z'],
  ],
  [
    'New York 2026 */15 across the spring gap',
    '*/15 * * * *',
    'America/New_York',
    '2026-03-08T06:40:00Z',
    ['2026-03-08T06:45:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-08T07:15:00.000Z'],
  ],
  // America/New_York 2027: 14 March and 7 November.
  ['New York 2027 spring gap', '30 2 * * *', 'America/New_York', '2027-03-13T12:00:00Z', ['2027-03-15T06:30:00.000Z']],
  [
    'New York 2027 autumn repeat',
    '30 1 * * *',
    'America/New_York',
    '2027-11-06T12:00:00Z',
    ['2027-11-07T05:30:00.000Z', '2027-11-08T06:30:00.000Z'],
  ],
  // Australia/Lord_Howe: +10:30 <-> +11:00, a 30-minute shift; 5 April 2026 02:00 -> 01:30, 4 October 2026 02:00 -> 02:30.
  [
    'Lord Howe autumn repeat of 01:30-01:59: 01:45 once',
    '45 1 * * *',
    'Australia/Lord_Howe',
    '2026-04-04T00:00:00Z',
    ['2026-04-04T14:45:00.000Z', '2026-04-05T15:15:00.000Z'],
  ],
  [
    'Lord Howe autumn: 01:15 is not repeated',
    '15 1 * * *',
    'Australia/Lord_Howe',
    '2026-04-04T00:00:00Z',
    ['2026-04-04T14:15:00.000Z', '2026-04-05T14:45:00.000Z'],
  ],
  [
    'Lord Howe spring gap 02:00-02:29: 02:15 skipped',
    '15 2 * * *',
    'Australia/Lord_Howe',
    '2026-10-03T00:00:00Z',
    ['2026-10-04T15:15:00.000Z'],
  ],
  ['Lord Howe spring: 02:45 exists', '45 2 * * *', 'Australia/Lord_Howe', '2026-10-03T00:00:00Z', ['2026-10-03T15:45:00.000Z']],
  // Calendar edges.
  [
    '29 February: the next leap year',
    '0 12 29 2 *',
    'UTC',
    '2026-01-01T00:00:00Z',
    ['2028-02-29T12:00:00.000Z', '2032-02-29T12:00:00.000Z'],
  ],
  ['29 February in Berlin', '0 12 29 2 *', 'Europe/Berlin', '2026-01-01T00:00:00Z', ['2028-02-29T11:00:00.000Z']],
  [
    '29 February or a Tuesday of February (day fields ORed)',
    '0 0 29 2 2',
    'UTC',
    '2028-02-27T00:00:00Z',
    ['2028-02-29T00:00:00.000Z', '2029-02-06T00:00:00.000Z'],
  ],
  [
    '0 0 31 * *: only months with 31 days',
    '0 0 31 * *',
    'UTC',
    '2026-01-31T00:00:00Z',
    [
      '2026-03-31T00:00:00.000Z',
      '2026-05-31T00:00:00.000Z',
      '2026-07-31T00:00:00.000Z',
      '2026-08-31T00:00:00.000Z',
      '2026-10-31T00:00:00.000Z',
      '2026-12-31T00:00:00.000Z',
      '2027-01-31T00:00:00.000Z',
    ],
  ],
  [
    '0 0 31 * * in New York',
    '0 0 31 * *',
    'America/New_York',
    '2026-10-01T00:00:00Z',
    ['2026-10-31T04:00:00.000Z', '2026-12-31T05:00:00.000Z'],
  ],
  ['month end: the 30th skips February', '0 0 30 * *', 'UTC', '2026-01-30T00:00:00Z', ['2026-03-30T00:00:00.000Z']],
  [
    'month end: midnight on the 1st in Berlin is the previous UTC day',
    '0 0 1 * *',
    'Europe/Berlin',
    '2026-01-15T00:00:00Z',
    ['2026-01-31T23:00:00.000Z', '2026-02-28T23:00:00.000Z', '2026-03-31T22:00:00.000Z'],
  ],
  [
    'month end: last minute of the year',
    '59 23 31 12 *',
    'UTC',
    '2026-06-01T00:00:00Z',
    ['2026-12-31T23:59:00.000Z', '2027-12-31T23:59:00.000Z'],
  ],
  ['strictly after: a time exactly on a scheduled instant', '*/5 * * * *', 'UTC', '2026-06-01T10:05:00Z', ['2026-06-01T10:10:00.000Z']],
  ['seconds are ignored', '*/5 * * * *', 'UTC', '2026-06-01T10:04:59.999Z', ['2026-06-01T10:05:00.000Z']],
];

describe('nextScheduledTime', () => {
  it.each(table)('%s', (_what, expression, zone, after, expected) => {
    expect(nextTimes(expression, zone, after, expected.length)).toEqual(expected);
  });
});

describe('wall times and the instants they name', () => {
  it.each([
    ['a gap names no instant', '2026-03-29T02:30:00Z', 'Europe/Berlin', []],
    [
      'a repeat names two, earlier first',
      '2026-10-25T02:30:00Z',
      'Europe/Berlin',
      ['2026-10-25T00:30:00.000Z', '2026-10-25T01:30:00.000Z'],
    ],
    ['an ordinary time names one', '2026-06-01T12:00:00Z', 'Europe/Berlin', ['2026-06-01T10:00:00.000Z']],
    [
      'Lord Howe repeats half an hour',
      '2026-04-05T01:45:00Z',
      'Australia/Lord_Howe',
      ['2026-04-04T14:45:00.000Z', '2026-04-04T15:15:00.000Z'],
    ],
  ])('%s', (_what, wall, zone, expected) => {
    expect(instantsOf(at(wall), zone).map(iso)).toEqual(expected);
  });

  it('reads the wall time of an instant', () => {
    expect(iso(wallTime(at('2026-07-01T10:00:00Z'), 'America/New_York'))).toBe('2026-07-01T06:00:00.000Z');
  });
});

describe('timeZoneProblem', () => {
  it.each([
    ['Europe/Berlin', undefined],
    ['UTC', undefined],
    ['America/Argentina/Buenos_Aires', undefined],
    ['Mars/Olympus_Mons', 'unknown time zone "Mars/Olympus_Mons": not in the IANA time zone database'],
    ['+01:00', 'invalid time zone "+01:00": expected an IANA name such as Europe/Berlin or UTC'],
    ['', 'invalid time zone "": expected an IANA name such as Europe/Berlin or UTC'],
  ])('%s', (zone, problem) => {
    expect(timeZoneProblem(zone)).toBe(problem);
  });
});

describe('dueTimes', () => {
  it.each([
    ['none due', '*/5 * * * *', '2026-06-01T10:00:00Z', '2026-06-01T10:04:00Z', 100, undefined, 0],
    [
      'one due, the until bound inclusive',
      '*/5 * * * *',
      '2026-06-01T10:00:00Z',
      '2026-06-01T10:05:00Z',
      100,
      '2026-06-01T10:05:00.000Z',
      1,
    ],
    [
      'five due: the newest and the count',
      '*/5 * * * *',
      '2026-06-01T10:00:00Z',
      '2026-06-01T10:27:00Z',
      100,
      '2026-06-01T10:25:00.000Z',
      5,
    ],
    [
      'a year of minutes: counted to the limit, the newest still found',
      '* * * * *',
      '2025-06-01T10:00:00Z',
      '2026-06-01T10:00:30Z',
      1000,
      '2026-06-01T10:00:00.000Z',
      1000,
    ],
    ['sparse and over the limit', '0 0 1 1 *', '2000-01-01T00:00:00Z', '2026-06-01T00:00:00Z', 10, '2026-01-01T00:00:00.000Z', 10],
  ])('%s', (_what, expression, after, until, limit, newest, count) => {
    const due = dueTimes(cron(expression), 'UTC', at(after), at(until), limit);
    expect({ newest: iso(due.newest), count: due.count }).toEqual({ newest, count });
  });
});
