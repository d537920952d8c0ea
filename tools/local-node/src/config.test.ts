import { ConfigError } from './errors.ts';
import { imageCommand, parseConfig, stripTagAndDigest } from './config.ts';

test.each([
  ['ghcr.io/kruntimes/runtimed:1.2', 'ghcr.io/kruntimes/runtimed'],
  ['localhost:5000/runtimed', 'localhost:5000/runtimed'],
  ['localhost:5000/runtimed:dev', 'localhost:5000/runtimed'],
  ['runtimed@sha256:abc', 'runtimed'],
  ['runtimed', 'runtimed'],
])('stripTagAndDigest(%j) = %j', (image, expected) => {
  expect(stripTagAndDigest(image)).toBe(expected);
});

test('an exact image reference wins over the untagged name', () => {
  const images = { runtimed: { entrypoint: ['a'] }, 'runtimed:dev': { entrypoint: ['b'] } };
  expect(imageCommand(images, 'runtimed:dev')?.entrypoint).toEqual(['b']);
  expect(imageCommand(images, 'runtimed:1.0')?.entrypoint).toEqual(['a']);
  expect(imageCommand(images, 'other')).toBeUndefined();
});

test('parses a config and resolves relative paths against its directory', () => {
  const config = parseConfig(
    {
      nodeName: 'local',
      stateDir: 'state',
      images: { server: { entrypoint: ['node', 'x.ts'], cmd: ['--port', '8080'] }, tool: { entrypoint: ['./bin/tool'] } },
      namespaces: ['a'],
      crashLoopBackoff: { initialMs: 100, maxMs: 1000 },
      kubeletServer: { certFile: 'pki/node.crt', keyFile: '/abs/node.key', clientCaFile: 'ca.crt', port: 10250 },
    },
    '/etc/krt',
  );
  expect(config.stateDir).toBe('/etc/krt/state');
  expect(config.images.tool?.entrypoint).toEqual(['/etc/krt/bin/tool']);
  expect(config.images.server?.entrypoint).toEqual(['node', 'x.ts']);
  expect(config.crashLoopBackoff).toEqual({ initialMs: 100, maxMs: 1000 });
  expect(config.kubeletServer).toEqual({
    certFile: '/etc/krt/pki/node.crt',
    keyFile: '/abs/node.key',
    clientCaFile: '/etc/krt/ca.crt',
    port: 10250,
  });
});

test.each([
  [null],
  [{ nodeName: 'UPPER', stateDir: 's', images: {} }],
  [{ nodeName: 'n', stateDir: '', images: {} }],
  [{ nodeName: 'n', stateDir: 's', images: { x: { entrypoint: [] } } }],
  [{ nodeName: 'n', stateDir: 's', images: {}, crashLoopBackoff: { initialMs: 0, maxMs: 1 } }],
  [{ nodeName: 'n', stateDir: 's', images: {}, kubeletServer: { certFile: 'c', keyFile: 'k' } }],
  [{ nodeName: 'n', stateDir: 's', images: {}, kubeletServer: { certFile: 'c', keyFile: 'k', clientCaFile: 'ca', port: 70_000 } }],
])('rejects %j with a ConfigError', (raw) => {
  expect(() => parseConfig(raw, '/')).toThrow(ConfigError);
});
