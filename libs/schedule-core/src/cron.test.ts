import { dayMatches, parseCron } from './cron.ts';
import type { Cron } from './cron.ts';

function parsed(expression: string): Cron {
  const result = parseCron(expression);
  if (!result.ok) throw new Error(result.message);
  return result.cron;
}

describe('parseCron', () => {
  it.each([
    ['* * * * *', { minutes: 60, hours: 24, daysOfMonth: 31, months: 12, daysOfWeek: 7 }],
    ['*/15 9-17 * * MON-FRI', { minutes: 4, hours: 9, daysOfMonth: 31, months: 12, daysOfWeek: 5 }],
    ['0,30 0 1,15 jan,Jul *', { minutes: 2, hours: 1, daysOfMonth: 2, months: 2, daysOfWeek: 7 }],
    ['5/20 * * * *', { minutes: 3, hours: 24, daysOfMonth: 31, months: 12, daysOfWeek: 7 }],
    ['0 0 * * 0,7', { minutes: 1, hours: 1, daysOfMonth: 31, months: 12, daysOfWeek: 1 }],
    ['@hourly', { minutes: 1, hours: 24, daysOfMonth: 31, months: 12, daysOfWeek: 7 }],
    ['  @DAILY ', { minutes: 1, hours: 1, daysOfMonth: 31, months: 12, daysOfWeek: 7 }],
  ])('%s', (expression, sizes) => {
    const cron = parsed(expression);
    expect({
      minutes: cron.minutes.size,
      hours: cron.hours.size,
      daysOfMonth: cron.daysOfMonth.size,
      months: cron.months.size,
      daysOfWeek: cron.daysOfWeek.size,
    }).toEqual(sizes);
  });

  it('reads 7 as Sunday', () => {
    expect([...parsed('0 0 * * 7').daysOfWeek]).toEqual([0]);
  });

  it.each([
    ['61 * * * *', 'invalid schedule "61 * * * *": minute field "61": 61 is out of range 0-59'],
    ['* * *', 'invalid schedule "* * *": expected 5 fields (minute hour day-of-month month day-of-week), got 3'],
    ['* * * * * *', 'invalid schedule "* * * * * *": expected 5 fields (minute hour day-of-month month day-of-week), got 6'],
    [
      '@reboot',
      'invalid schedule "@reboot": unknown macro @reboot (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)',
    ],
    ['1-2-3 * * * *', 'invalid schedule "1-2-3 * * * *": minute field "1-2-3": "1-2-3" is not a value or a range A-B'],
    ['*/0 * * * *', 'invalid schedule "*/0 * * * *": minute field "*/0": step "0" is not a positive integer'],
    ['5-1 * * * *', 'invalid schedule "5-1 * * * *": minute field "5-1": range 5-1 ends before it starts'],
    ['0 24 * * *', 'invalid schedule "0 24 * * *": hour field "24": 24 is out of range 0-23'],
    ['0 0 0 * *', 'invalid schedule "0 0 0 * *": day-of-month field "0": 0 is out of range 1-31'],
    ['0 0 * FOO *', 'invalid schedule "0 0 * FOO *": month field "FOO": "FOO" is not a number or a name JAN-DEC'],
    ['0 0 * * 8', 'invalid schedule "0 0 * * 8": day-of-week field "8": 8 is out of range 0-7'],
    ['0 0 1,,2 * *', 'invalid schedule "0 0 1,,2 * *": day-of-month field "1,,2": empty list item'],
    ['0 0 1/2/3 * *', 'invalid schedule "0 0 1/2/3 * *": day-of-month field "1/2/3": "1/2/3" has more than one /'],
    ['0 0 30 2 *', 'invalid schedule "0 0 30 2 *": no month of the month field has any day of the day-of-month field, so it never fires'],
  ])('refuses %s with a message naming the field', (expression, message) => {
    expect(parseCron(expression)).toEqual({ ok: false, message });
  });

  it('accepts 30 February when a day of the week can still match', () => {
    expect(parseCron('0 0 30 2 MON').ok).toBe(true);
  });
});

describe('dayMatches', () => {
  // 13 March 2026 is a Friday, 6 March a Friday, 13 April a Monday, 14 March a Saturday.
  it.each([
    ['0 0 13 * 5', 13, 5, true],
    ['0 0 13 * 5', 6, 5, true],
    ['0 0 13 * 5', 13, 1, true],
    ['0 0 13 * 5', 14, 6, false],
    ['0 0 13 * *', 13, 1, true],
    ['0 0 13 * *', 6, 5, false],
    ['0 0 * * 5', 6, 5, true],
    ['0 0 * * 5', 13, 1, false],
    ['0 0 * * *', 14, 6, true],
    ['0 0 */2 * 5', 2, 1, false],
    ['0 0 */2 * 5', 3, 1, true],
  ])('%s on day %d (weekday %d): %s', (expression, dayOfMonth, dayOfWeek, expected) => {
    expect(dayMatches(parsed(expression), dayOfMonth, dayOfWeek)).toBe(expected);
  });
});
