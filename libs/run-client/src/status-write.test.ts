import { ApiException } from '@kubernetes/client-node';
import type { RunSchedule, RunScheduleStatus } from '@kruntimes/api';
import { sameStatus, writeStatus } from './status-write.ts';
import type { StatusWrite } from './status-write.ts';
import type { WriteResult } from './refusal.ts';

const schedule = (status?: RunScheduleStatus): RunSchedule => ({
  apiVersion: 'kruntimes.io/v1alpha1',
  kind: 'RunSchedule',
  metadata: { name: 's', namespace: 'ns', uid: 'u', resourceVersion: '7' },
  spec: { schedule: '* * * * *', runTemplate: { spec: { runtime: 'py', source: { inline: 'x' }, mode: { task: {} } } } },
  ...(status === undefined ? {} : { status }),
});

interface Scenario {
  name: string;
  previous?: RunScheduleStatus;
  next: RunScheduleStatus;
  /** How the replace ends, when one is sent. */
  answer?: 'ok' | 'Conflict' | 'NotFound';
  expected: { sent: boolean; result: StatusWrite<RunSchedule>['written'] | 'Unchanged' | 'Conflict' | 'NotFound'; logged: boolean };
}

const scenarios: Scenario[] = [
  { name: 'a new status written', next: { active: 1 }, answer: 'ok', expected: { sent: true, result: true, logged: false } },
  {
    name: 'a changed status written',
    previous: { active: 1 },
    next: { active: 2 },
    answer: 'ok',
    expected: { sent: true, result: true, logged: false },
  },
  {
    name: 'the same status: nothing sent',
    previous: { active: 1, skipped: 0 },
    next: { skipped: 0, active: 1 },
    expected: { sent: false, result: 'Unchanged', logged: false },
  },
  {
    name: 'Conflict: not written, logged',
    previous: { active: 1 },
    next: { active: 2 },
    answer: 'Conflict',
    expected: { sent: true, result: 'Conflict', logged: true },
  },
  {
    name: 'NotFound: not written, logged',
    next: { active: 2 },
    answer: 'NotFound',
    expected: { sent: true, result: 'NotFound', logged: true },
  },
];

test.each(scenarios)('$name', async ({ previous, next, answer, expected }) => {
  let sent = 0;
  const logged: object[] = [];
  const client = {
    replaceStatus: (object: RunSchedule, status: RunScheduleStatus): Promise<WriteResult<RunSchedule>> => {
      sent += 1;
      if (answer === 'ok') return Promise.resolve({ ok: true, object: { ...object, status } });
      const code = answer === 'Conflict' ? 409 : 404;
      return Promise.resolve({ ok: false, reason: answer ?? 'NotFound', error: new ApiException<unknown>(code, '', {}, {}) });
    },
  };
  const result = await writeStatus(client, schedule(previous), next, { debug: (object) => logged.push(object) });
  expect({ sent: sent > 0, result: result.written || result.reason, logged: logged.length > 0 }).toEqual(expected);
  if (result.written) expect(result.object.status).toEqual(next);
});

describe('sameStatus', () => {
  const cases: [string, unknown, unknown, boolean][] = [
    ['the order of members does not matter', { a: 1, b: [{ c: 2, d: 3 }] }, { b: [{ d: 3, c: 2 }], a: 1 }, true],
    ['a member set to undefined is absent', { a: 1, b: undefined }, { a: 1 }, true],
    ['no status is {}', undefined, {}, true],
    ['the order of a list matters', { a: [1, 2] }, { a: [2, 1] }, false],
    ['a changed value', { a: { b: 'x' } }, { a: { b: 'y' } }, false],
    ['an added member', { a: 1 }, { a: 1, b: 0 }, false],
  ];
  test.each(cases)('%s', (_name, a, b, same) => {
    expect(sameStatus(a, b)).toBe(same);
  });
});
