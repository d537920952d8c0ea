import { parseOptions, UsageError } from './options.ts';

const DEFAULT_CRDS = '/repo/deploy/charts/kruntimes/crds';

test('defaults: the controller manager and the chart CRDs', () => {
  expect(parseOptions(['--dir', '/tmp/c'], DEFAULT_CRDS)).toEqual({
    dir: '/tmp/c',
    controllerManager: true,
    crdDirectories: [DEFAULT_CRDS],
  });
});

test('flags', () => {
  expect(parseOptions(['--dir=/tmp/c', '--no-controller-manager', '--crds', '/a', '--crds', '/b'], DEFAULT_CRDS)).toEqual({
    dir: '/tmp/c',
    controllerManager: false,
    crdDirectories: ['/a', '/b'],
  });
  expect(parseOptions(['--dir', '/tmp/c', '--no-crds'], DEFAULT_CRDS).crdDirectories).toEqual([]);
});

test.each([
  [[]],
  [['--dir']],
  [['--dir', '/x', '--bogus']],
  [['--dir', '/x', 'positional']],
  [['--dir', '/x', '--crds', '/a', '--no-crds']],
])('usage errors: %j', (argv) => {
  expect(() => parseOptions(argv, DEFAULT_CRDS)).toThrow(UsageError);
});
