import type { RunSchedule } from '@kruntimes/api';
import { parseCommandLine } from '../args.ts';
import { CliError, EXIT } from '../exit-codes.ts';
import { formatSchedules } from './schedule.ts';

describe('krt schedule arguments', () => {
  it.each([
    [['schedule', 'trigger', 'nightly'], { name: 'schedule', action: 'trigger', schedule: 'nightly' }],
    [
      ['schedule', 'trigger', 'nightly', '--id', 'deploy-42'],
      { name: 'schedule', action: 'trigger', schedule: 'nightly', triggerId: 'deploy-42' },
    ],
    [['schedule', 'get'], { name: 'schedule', action: 'get', output: 'table' }],
    [['schedule', 'get', 'nightly', '-o', 'yaml'], { name: 'schedule', action: 'get', schedule: 'nightly', output: 'yaml' }],
    [['schedule', 'suspend', 'nightly'], { name: 'schedule', action: 'suspend', schedule: 'nightly' }],
    [['schedule', 'resume', 'nightly'], { name: 'schedule', action: 'resume', schedule: 'nightly' }],
  ])('%j', (argv, command) => {
    expect(parseCommandLine(argv).command).toEqual(command);
  });

  it.each([
    [['schedule'], 'krt schedule needs an action: trigger, get, suspend or resume'],
    [['schedule', 'run', 'x'], 'krt schedule needs an action: trigger, get, suspend or resume, not "run"'],
    [['schedule', 'trigger'], 'krt schedule trigger takes a RunSchedule name'],
    [['schedule', 'suspend', 'x', '--id', 'a'], 'krt schedule suspend does not take --id'],
    [['schedule', 'trigger', 'x', '-o', 'json'], 'krt schedule trigger does not take -o'],
    [['schedule', 'trigger', 'x', '--id', 'has space'], '--id: trigger ID must be 1-128 bytes of visible ASCII'],
    [['schedule', 'get', '-o', 'wide'], 'krt schedule get takes -o json or yaml'],
    [['schedule', 'get', 'Bad_Name'], '"Bad_Name" is not a valid RunSchedule name'],
    [['schedule', 'get', 'a', 'b'], 'krt schedule takes an action and at most one RunSchedule name'],
  ])('refuses %j', (argv, message) => {
    let error: unknown;
    try {
      parseCommandLine(argv);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).exitCode).toBe(EXIT.usage);
    expect((error as CliError).message).toContain(message);
  });
});

describe('formatSchedules', () => {
  const schedule: RunSchedule = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'RunSchedule',
    metadata: { name: 'nightly', creationTimestamp: '2026-06-01T00:00:00Z' },
    spec: {
      schedule: '30 2 * * *',
      timeZone: 'Europe/Berlin',
      runTemplate: { spec: { runtime: 'py', source: { inline: 'x' }, mode: { task: {} } } },
    },
    status: { active: 1, lastScheduledAt: '2026-06-02T00:30:00Z', nextRunAt: '2026-06-03T00:30:00Z' },
  };

  it('prints the columns of kubectl get cronjobs and the next run', () => {
    expect(formatSchedules([schedule], 'table', Date.parse('2026-06-02T01:00:00Z'))).toBe(
      [
        'NAME      SCHEDULE     TIMEZONE        SUSPEND   ACTIVE   LAST SCHEDULE   NEXT RUN               AGE',
        'nightly   30 2 * * *   Europe/Berlin   false     1        30m             2026-06-03T00:30:00Z   25h',
        '',
      ].join('\n'),
    );
  });
});
