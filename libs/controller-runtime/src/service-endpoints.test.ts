import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { serviceEndpoints } from './service-endpoints.ts';

const service: V1Service = {
  metadata: { name: 'python', namespace: 'ns' },
  spec: {
    selector: { app: 'python' },
    ports: [
      { name: 'grpc', port: 7443, targetPort: 'grpc' },
      { name: 'peer', port: 7444, targetPort: 9000 },
    ],
  },
};

function pod(
  name: string,
  overrides: { ready?: boolean; ip?: string; namespace?: string; labels?: Record<string, string>; deleting?: boolean } = {},
): V1Pod {
  return {
    metadata: {
      name,
      uid: `uid-${name}`,
      namespace: overrides.namespace ?? 'ns',
      labels: overrides.labels ?? { app: 'python' },
      ...(overrides.deleting === true ? { deletionTimestamp: new Date() } : {}),
    },
    spec: { containers: [{ name: 'runtimed', ports: [{ name: 'grpc', containerPort: 7443 }] }] },
    status: {
      ...(overrides.ip === '' ? {} : { podIP: overrides.ip ?? '127.0.0.2' }),
      conditions: [{ type: 'Ready', status: overrides.ready === false ? 'False' : 'True' }],
    },
  };
}

describe('serviceEndpoints', () => {
  it('lists a ready, matching Pod with its resolved ports', () => {
    expect(serviceEndpoints(service, [pod('a')])).toEqual([
      { podName: 'a', podUID: 'uid-a', ip: '127.0.0.2', ports: { grpc: 7443, peer: 9000 } },
    ]);
  });

  it.each([
    ['not ready', pod('a', { ready: false })],
    ['terminating', pod('a', { deleting: true })],
    ['without an IP', pod('a', { ip: '' })],
    ['in another namespace', pod('a', { namespace: 'other' })],
    ['not matching the selector', pod('a', { labels: { app: 'bash' } })],
  ])('leaves out a Pod %s', (_name, candidate) => {
    expect(serviceEndpoints(service, [candidate])).toEqual([]);
  });

  it('derives nothing for a Service without a selector', () => {
    expect(serviceEndpoints({ metadata: { name: 'manual', namespace: 'ns' }, spec: { ports: [] } }, [pod('a')])).toEqual([]);
  });
});
