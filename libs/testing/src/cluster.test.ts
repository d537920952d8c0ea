import { ClusterInfoError } from './errors.ts';
import { Cluster, namespaceName } from './cluster.ts';

test.each([
  ['cel', /^cel-[0-9a-f]{6}$/],
  ['Spec Is Immutable › changing runtime', /^spec-is-immutable-changing-runtime-[0-9a-f]{6}$/],
  ['---', /^test-[0-9a-f]{6}$/],
  ['x'.repeat(100), /^x{50}-[0-9a-f]{6}$/],
])('namespace names are DNS labels: %s', (prefix, expected) => {
  expect(namespaceName(prefix)).toMatch(expected);
});

test('fromEnvironment explains how to get a cluster when there is none', () => {
  expect(() => Cluster.fromEnvironment({})).toThrow(ClusterInfoError);
  expect(() => Cluster.fromEnvironment({})).toThrow(/jest-global-setup/);
});
