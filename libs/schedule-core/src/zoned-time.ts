import { TIME_ZONE_PATTERN } from '@kruntimes/api';
import { dayMatches } from './cron.ts';
import type { Cron } from './cron.ts';

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;
/** 29 February on a Monday comes back after 28 years; a cron that fires is found well within this. */
const SEARCH_YEARS = 30;

const formats = new Map<string, Intl.DateTimeFormat>();

const timeZoneName = new RegExp(TIME_ZONE_PATTERN);

/** Why `zone` is not a zone of this process's database, or undefined when it is. */
export function timeZoneProblem(zone: string): string | undefined {
  if (!timeZoneName.test(zone)) return `invalid time zone "${zone}": expected an IANA name such as Europe/Berlin or UTC`;
  try {
    formatFor(zone);
    return undefined;
  } catch {
    return `unknown time zone "${zone}": not in the IANA time zone database`;
  }
}

function formatFor(zone: string): Intl.DateTimeFormat {
  let format = formats.get(zone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formats.set(zone, format);
  }
  return format;
}

/**
 * The local wall time of `instant` in `zone`, as the milliseconds of the same calendar
 * fields read as UTC (so calendar arithmetic on it is plain Date.UTC arithmetic).
 */
export function wallTime(instant: number, zone: string): number {
  const fields: Record<string, number> = {};
  for (const part of formatFor(zone).formatToParts(instant)) if (part.type !== 'literal') fields[part.type] = Number(part.value);
  const { year = 0, month = 1, day = 1, hour = 0, minute = 0, second = 0 } = fields;
  return Date.UTC(year, month - 1, day, hour, minute, second) + (instant % 1000);
}

/** UTC offset of `zone` at `instant`, in milliseconds (east positive). */
export function offsetAt(instant: number, zone: string): number {
  return wallTime(instant, zone) - instant;
}

/**
 * The instants at which `zone`'s clocks show the wall time `wall`: none in a spring-forward
 * gap, two in an autumn repeat (earlier first), one otherwise. Offsets are read a day on
 * either side: no zone changes its offset twice within a day.
 */
export function instantsOf(wall: number, zone: string): number[] {
  const offsets = new Set([offsetAt(wall - DAY_MS, zone), offsetAt(wall + DAY_MS, zone)]);
  const instants = [...offsets].map((offset) => wall - offset).filter((instant) => wallTime(instant, zone) === wall);
  return [...new Set(instants)].sort((a, b) => a - b);
}

/** The next wall time after `wall` (exclusive) that the cron fields match, on whole minutes; undefined past the search bound. */
export function nextMatchingWallTime(cron: Cron, wall: number): number | undefined {
  const limit = wall + SEARCH_YEARS * 366 * DAY_MS;
  let t = Math.floor(wall / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
  while (t <= limit) {
    const d = new Date(t);
    const [year, month, day, hour] = [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours()];
    if (!cron.months.has(month + 1)) t = Date.UTC(year, month + 1, 1);
    else if (!dayMatches(cron, day, d.getUTCDay())) t = Date.UTC(year, month, day + 1);
    else if (!cron.hours.has(hour)) t = Date.UTC(year, month, day, hour + 1);
    else if (!cron.minutes.has(d.getUTCMinutes())) t += MINUTE_MS;
    else return t;
  }
  return undefined;
}

/**
 * The first scheduled UTC instant strictly after `after`, with cron's usual DST rules:
 * a local time that does not exist (the spring-forward gap) is skipped, not moved to the
 * next valid minute; a local time that happens twice (the autumn repeat) is scheduled once,
 * at its first occurrence. Undefined if the cron never fires again within the search bound.
 */
export function nextScheduledTime(cron: Cron, zone: string, after: number): number | undefined {
  // Wall times are visited in order; each maps to the instants it names. Starting at the
  // wall time of `after` is enough: during a repeat it is the later reading, and every
  // wall time before it in the repeated hour had its first occurrence before `after`.
  for (let wall = nextMatchingWallTime(cron, wallTime(after, zone)); wall !== undefined; wall = nextMatchingWallTime(cron, wall)) {
    const first = instantsOf(wall, zone)[0];
    if (first === undefined) continue; // in a gap: skipped
    if (first > after) return first;
    // Its first occurrence is not after `after`: the repeat is not scheduled again.
  }
  return undefined;
}

/**
 * The scheduled instants in (`after`, `until`]: the newest of them, and how many there were
 * (counted up to `countLimit`, so that a schedule every minute down for a year stays cheap).
 */
export function dueTimes(
  cron: Cron,
  zone: string,
  after: number,
  until: number,
  countLimit: number,
): { newest: number | undefined; count: number } {
  let newest: number | undefined;
  let count = 0;
  for (let t = nextScheduledTime(cron, zone, after); t !== undefined && t <= until; t = nextScheduledTime(cron, zone, t)) {
    newest = t;
    count += 1;
    if (count >= countLimit) return { newest: newestBefore(cron, zone, t, until), count };
  }
  return { newest, count };
}

/** The newest scheduled instant in (`after`, `until`], searched back from `until` in widening windows. */
function newestBefore(cron: Cron, zone: string, after: number, until: number): number | undefined {
  for (const span of [60 * MINUTE_MS, DAY_MS, 32 * DAY_MS, 366 * DAY_MS, Number.POSITIVE_INFINITY]) {
    const from = Math.max(after, until - span);
    let newest: number | undefined;
    for (let t = nextScheduledTime(cron, zone, from); t !== undefined && t <= until; t = nextScheduledTime(cron, zone, t)) newest = t;
    if (newest !== undefined || from === after) return newest ?? after;
  }
  return after;
}
