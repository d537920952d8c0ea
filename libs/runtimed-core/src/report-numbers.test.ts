import { ReportNumbers } from './report-numbers.ts';

const attempt1 = { uid: 'uid-1', attempt: 1 };
const attempt2 = { uid: 'uid-1', attempt: 2 };

test.each([
  ['the first report of an attempt with nothing recorded', [], undefined, 1],
  ['a fresh process continues from the live Run (a restart)', [], 7, 8],
  ['the next report of this process', [[attempt1, undefined]], undefined, 2],
  ['a live number ahead of this process wins', [[attempt1, undefined]], 9, 10],
  ['a live number behind this process does not lower it', [[attempt1, 3]], 1, 5],
] as const)('%s', (_name, before, recorded, expected) => {
  const numbers = new ReportNumbers();
  for (const [ref, live] of before) numbers.next(ref, live);
  expect(numbers.next(attempt1, recorded)).toBe(expected);
});

test('each attempt counts on its own', () => {
  const numbers = new ReportNumbers();
  expect([numbers.next(attempt1, undefined), numbers.next(attempt1, undefined), numbers.next(attempt2, undefined)]).toEqual([1, 2, 1]);
});
