import { ContainerConfigError } from './errors.ts';
import { downwardField } from './downward.ts';

const pod = {
  metadata: { name: 'p', namespace: 'ns', uid: 'u-1', labels: { b: '2', a: '1' }, annotations: { note: 'x' } },
  spec: { nodeName: 'node-a', serviceAccountName: 'sa', containers: [] },
};

test.each([
  ['metadata.name', 'p'],
  ['metadata.namespace', 'ns'],
  ['metadata.uid', 'u-1'],
  ["metadata.labels['a']", '1'],
  ["metadata.annotations['note']", 'x'],
  ["metadata.labels['missing']", ''],
  ['metadata.labels', 'a="1"\nb="2"'],
  ['spec.nodeName', 'node-a'],
  ['spec.serviceAccountName', 'sa'],
  ['status.podIP', '127.0.0.7'],
  ['status.hostIP', '127.0.0.1'],
])('%s', (path, expected) => {
  expect(downwardField(pod, path, '127.0.0.7', '127.0.0.1')).toBe(expected);
});

test('unknown fields are a container config error', () => {
  expect(() => downwardField(pod, 'spec.unknown', '127.0.0.7', '127.0.0.1')).toThrow(ContainerConfigError);
});
