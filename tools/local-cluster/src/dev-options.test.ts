import { parseDevArgs } from './dev-options.ts';
import { UsageError } from './options.ts';

test('up is the default; --dir, --once and --no-prometheus', () => {
  expect(parseDevArgs([], '/repo/tmp/dev')).toEqual({
    subcommand: 'up',
    dir: '/repo/tmp/dev',
    once: false,
    noPrometheus: false,
    noJaeger: false,
  });
  expect(parseDevArgs(['up', '--once', '--dir', '/tmp/x'], '/d')).toEqual({
    subcommand: 'up',
    dir: '/tmp/x',
    once: true,
    noPrometheus: false,
    noJaeger: false,
  });
  expect(parseDevArgs(['down', '--dir=/tmp/x'], '/d')).toEqual({
    subcommand: 'down',
    dir: '/tmp/x',
    once: false,
    noPrometheus: false,
    noJaeger: false,
  });
  expect(parseDevArgs(['up', '--no-prometheus'], '/d')).toEqual({
    subcommand: 'up',
    dir: '/d',
    once: false,
    noPrometheus: true,
    noJaeger: false,
  });
  expect(parseDevArgs(['up', '--no-jaeger'], '/d')).toEqual({
    subcommand: 'up',
    dir: '/d',
    once: false,
    noPrometheus: false,
    noJaeger: true,
  });
  expect(parseDevArgs(['logs', 'hello/runtimed'], '/d')).toEqual({
    subcommand: 'logs',
    dir: '/d',
    once: false,
    noPrometheus: false,
    noJaeger: false,
    target: 'hello/runtimed',
  });
});

test.each([
  [['bogus']],
  [['down', '--once']],
  [['status', '--no-prometheus']],
  [['down', '--no-jaeger']],
  [['status', 'extra']],
  [['logs', 'a', 'b']],
  [['up', '--dir', '']],
  [['up', '--nope']],
])('usage errors: %j', (argv) => {
  expect(() => parseDevArgs(argv, '/d')).toThrow(UsageError);
});
