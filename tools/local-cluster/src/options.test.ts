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

test('a real node: address, port and node name', () => {
  expect(
    parseOptions(['--dir', '/tmp/c', '--bind-address', '10.203.0.1', '--secure-port', '6443', '--node', 'krt-node'], DEFAULT_CRDS),
  ).toEqual({
    dir: '/tmp/c',
    controllerManager: true,
    crdDirectories: [DEFAULT_CRDS],
    bindAddress: '10.203.0.1',
    securePort: 6443,
    nodes: ['krt-node'],
  });
});

test('--bind-address alone: the real node joins; --no-node: none does', () => {
  expect(parseOptions(['--dir', '/x', '--bind-address', '10.203.0.1'], DEFAULT_CRDS).nodes).toEqual(['krt-node']);
  expect(parseOptions(['--dir', '/x', '--bind-address', '10.203.0.1', '--no-node'], DEFAULT_CRDS).nodes).toBeUndefined();
  expect(parseOptions(['--dir', '/x'], DEFAULT_CRDS).nodes).toBeUndefined();
  expect(parseOptions(['--dir', '/x', '--node', 'other'], DEFAULT_CRDS).nodes).toEqual(['other']);
});

test('--node repeated: two kubelets join, in order (tools/real-node, the second node)', () => {
  expect(
    parseOptions(['--dir', '/x', '--bind-address', '10.203.0.1', '--node', 'krt-node', '--node', 'krt-node2'], DEFAULT_CRDS).nodes,
  ).toEqual(['krt-node', 'krt-node2']);
});

test.each([
  [['--node', 'a', '--no-node'], /--node and --no-node exclude each other/],
  [['--bind-address', 'localhost'], /--bind-address: 'localhost' is not an IPv4 address/],
  [['--bind-address', '10.203.0.256'], /not an IPv4 address/],
  [['--bind-address', '::1'], /not an IPv4 address/],
  [['--secure-port', '0'], /--secure-port: '0' is not a port number/],
  [['--secure-port', '65536'], /not a port number/],
  [['--secure-port', '64x'], /not a port number/],
  [['--secure-port=-1'], /not a port number/],
  [['--secure-port', ''], /not a port number/],
  [['--node', 'Krt_Node'], /--node: 'Krt_Node' is not a node name/],
  [['--node', ''], /not a node name/],
  [['--node', 'a.b'], /not a node name/],
  [['--node', 'a', '--node', 'a'], /--node: a name given twice/],
])('usage errors name the bad value: %j', (extra, message) => {
  expect(() => parseOptions(['--dir', '/x', ...extra], DEFAULT_CRDS)).toThrow(message);
  expect(() => parseOptions(['--dir', '/x', ...extra], DEFAULT_CRDS)).toThrow(UsageError);
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
