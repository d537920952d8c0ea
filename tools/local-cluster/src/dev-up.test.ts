import { join } from 'node:path';
import { hostPathInContainer } from './dev-node-agent.ts';

test('a host file as a container path lands on the host file under any container root of the node', () => {
  const nodeDir = '/home/me/repo/tmp/dev/node';
  const path = hostPathInContainer(nodeDir, '/home/me/repo/tmp/dev/gateway/ca.crt');
  expect(join(`${nodeDir}/pods/demo_python-abc_0123/containers/runtimed/root`, path)).toBe('/home/me/repo/tmp/dev/gateway/ca.crt');
  expect(join('', path)).toBe('/home/me/repo/tmp/dev/gateway/ca.crt');
});
