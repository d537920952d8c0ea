import { parseDevArgs } from './dev-options.ts';
import { UsageError } from './options.ts';

test('up is the default; --dir and --once', () => {
  expect(parseDevArgs([], '/repo/tmp/dev')).toEqual({ subcommand: 'up', dir: '/repo/tmp/dev', once: false });
  expect(parseDevArgs(['up', '--once', '--dir', '/tmp/x'], '/d')).toEqual({ subcommand: 'up', dir: '/tmp/x', once: true });
  expect(parseDevArgs(['down', '--dir=/tmp/x'], '/d')).toEqual({ subcommand: 'down', dir: '/tmp/x', once: false });
  expect(parseDevArgs(['logs', 'hello/runtimed'], '/d')).toEqual({ subcommand: 'logs', dir: '/d', once: false, target: 'hello/runtimed' });
});

test.each([[['bogus']], [['down', '--once']], [['status', 'extra']], [['logs', 'a', 'b']], [['up', '--dir', '']], [['up', '--nope']]])(
  'usage errors: %j',
  (argv) => {
    expect(() => parseDevArgs(argv, '/d')).toThrow(UsageError);
  },
);
