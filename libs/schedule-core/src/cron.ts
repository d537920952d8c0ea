/**
 * A parsed five-field cron expression (minute hour day-of-month month day-of-week), with
 * the semantics of Vixie cron and Kubernetes CronJob: when both day fields are restricted,
 * a day matches if either does; `7` is Sunday like `0`; names (`JAN`, `MON`) in any case.
 */
export interface Cron {
  readonly source: string;
  readonly minutes: ReadonlySet<number>;
  readonly hours: ReadonlySet<number>;
  readonly daysOfMonth: ReadonlySet<number>;
  readonly months: ReadonlySet<number>;
  readonly daysOfWeek: ReadonlySet<number>;
  /** Day-of-month and day-of-week were each given as something other than `*`. */
  readonly daysOfMonthRestricted: boolean;
  readonly daysOfWeekRestricted: boolean;
}

export type CronParse = { ok: true; cron: Cron } | { ok: false; message: string };

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const FIELDS: readonly FieldSpec[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] },
  // 7 is accepted for Sunday and folded onto 0 after parsing.
  { name: 'day-of-week', min: 0, max: 7, names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] },
];

const MACROS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const FIELD_ORDER = 'minute hour day-of-month month day-of-week';

/** Parses a cron expression; a failure says which field is wrong and why, to show users as is. */
export function parseCron(expression: string): CronParse {
  const trimmed = expression.trim();
  const expanded = trimmed.startsWith('@') ? MACROS[trimmed.toLowerCase()] : trimmed;
  if (expanded === undefined) return fail(expression, `unknown macro ${trimmed} (known: ${Object.keys(MACROS).join(', ')})`);
  const parts = expanded.split(/\s+/).filter((part) => part !== '');
  if (parts.length !== FIELDS.length) return fail(expression, `expected 5 fields (${FIELD_ORDER}), got ${parts.length}`);
  const sets: Set<number>[] = [];
  for (const [index, spec] of FIELDS.entries()) {
    const parsed = parseField(parts[index] ?? '', spec);
    if (typeof parsed === 'string') return fail(expression, `${spec.name} field "${parts[index] ?? ''}": ${parsed}`);
    sets.push(parsed);
  }
  const [minutes, hours, daysOfMonth, months, daysOfWeek] = sets as [Set<number>, Set<number>, Set<number>, Set<number>, Set<number>];
  if (daysOfWeek.delete(7)) daysOfWeek.add(0);
  // As Kubernetes CronJob reads it: only a bare `*` leaves a day field unrestricted (`*/2` restricts).
  const daysOfMonthRestricted = parts[2] !== '*';
  const daysOfWeekRestricted = parts[4] !== '*';
  const impossible = impossibleDay(daysOfMonth, months);
  if (impossible !== undefined && !daysOfWeekRestricted) return fail(expression, impossible);
  return {
    ok: true,
    cron: {
      source: expression,
      minutes,
      hours,
      daysOfMonth,
      months,
      daysOfWeek,
      daysOfMonthRestricted,
      daysOfWeekRestricted,
    },
  };
}

function fail(expression: string, reason: string): CronParse {
  return { ok: false, message: `invalid schedule "${expression}": ${reason}` };
}

/** One field: a comma-separated list of `*`, `N`, `A-B`, each optionally `/STEP`. Returns the values, or why not. */
function parseField(text: string, spec: FieldSpec): Set<number> | string {
  const values = new Set<number>();
  for (const item of text.split(',')) {
    if (item === '') return 'empty list item';
    const [range = '', stepText, extra] = item.split('/');
    if (extra !== undefined) return `"${item}" has more than one /`;
    let step = 1;
    if (stepText !== undefined) {
      const parsedStep = number(stepText);
      if (parsedStep === undefined || parsedStep < 1) return `step "${stepText}" is not a positive integer`;
      step = parsedStep;
    }
    let low: number;
    let high: number;
    if (range === '*') {
      low = spec.min;
      high = spec.name === 'day-of-week' ? 6 : spec.max;
    } else {
      const [lowText = '', highText, more] = range.split('-');
      if (more !== undefined) return `"${range}" is not a value or a range A-B`;
      const parsedLow = value(lowText, spec);
      if (typeof parsedLow === 'string') return parsedLow;
      low = parsedLow;
      if (highText === undefined) {
        // `N/STEP` means N to the end of the field, stepping, as in Vixie cron.
        high = stepText === undefined ? low : spec.max;
      } else {
        const parsedHigh = value(highText, spec);
        if (typeof parsedHigh === 'string') return parsedHigh;
        high = parsedHigh;
        if (high < low) return `range ${range} ends before it starts`;
      }
    }
    for (let v = low; v <= high; v += step) values.add(v);
  }
  return values;
}

function value(text: string, spec: FieldSpec): number | string {
  const byName = spec.names?.indexOf(text.toUpperCase()) ?? -1;
  if (byName >= 0) return spec.name === 'month' ? byName + 1 : byName;
  const parsed = number(text);
  if (parsed === undefined) {
    const names = spec.names === undefined ? '' : ` or a name ${spec.names[0] ?? ''}-${spec.names.at(-1) ?? ''}`;
    return `"${text}" is not a number${names}`;
  }
  if (parsed < spec.min || parsed > spec.max) return `${parsed} is out of range ${spec.min}-${spec.max}`;
  return parsed;
}

function number(text: string): number | undefined {
  return /^[0-9]{1,4}$/.test(text) ? Number(text) : undefined;
}

const MAX_DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** `0 0 30 2 *` can never fire: say so instead of searching forever. */
function impossibleDay(daysOfMonth: ReadonlySet<number>, months: ReadonlySet<number>): string | undefined {
  for (const month of months) for (const day of daysOfMonth) if (day <= (MAX_DAYS_IN_MONTH[month - 1] ?? 31)) return undefined;
  return 'no month of the month field has any day of the day-of-month field, so it never fires';
}

/** Whether a calendar day (in the schedule's zone) matches the two day fields. */
export function dayMatches(cron: Cron, dayOfMonth: number, dayOfWeek: number): boolean {
  const byMonth = cron.daysOfMonth.has(dayOfMonth);
  const byWeek = cron.daysOfWeek.has(dayOfWeek);
  if (cron.daysOfMonthRestricted && cron.daysOfWeekRestricted) return byMonth || byWeek;
  if (cron.daysOfMonthRestricted) return byMonth;
  if (cron.daysOfWeekRestricted) return byWeek;
  return true;
}
