import type { V1EndpointSlice } from '@kubernetes/client-node';
import { DnsResolver, readyEndpointsOfSlices, runtimedServerName } from './resolver.ts';

describe('DnsResolver', () => {
  const make = (answers: Record<string, number | Error>) => {
    const asked: string[] = [];
    const clock = { now: 0 };
    const resolver = new DnsResolver({
      now: () => clock.now,
      resolveSrv: (name) => {
        asked.push(name);
        const answer = answers[name];
        if (answer === undefined) return Promise.reject(new Error('ENOTFOUND'));
        if (answer instanceof Error) return Promise.reject(answer);
        return Promise.resolve([{ port: answer }]);
      },
    });
    return { resolver, asked, clock };
  };

  it.each([
    ["the Service's named grpc port from its SRV record", { '_grpc._tcp.py.demo.svc.cluster.local': 9443 }, 'py.demo.svc:9443'],
    ['the default port without an SRV record', {}, 'py.demo.svc:7443'],
    ['the default port when the lookup fails', { '_grpc._tcp.py.demo.svc.cluster.local': new Error('ETIMEOUT') }, 'py.demo.svc:7443'],
  ])('%s', async (_what, answers, address) => {
    const { resolver } = make(answers);
    expect(await resolver.resolve('demo', 'py')).toEqual([{ address }]);
  });

  it('caches the port for 30 s', async () => {
    const { resolver, asked, clock } = make({ '_grpc._tcp.py.demo.svc.cluster.local': 9443 });
    await resolver.resolve('demo', 'py');
    clock.now = 29_999;
    await resolver.resolve('demo', 'py');
    expect(asked).toHaveLength(1);
    clock.now = 30_001;
    await resolver.resolve('demo', 'py');
    expect(asked).toHaveLength(2);
  });

  it('verifies runtimed as <runtime>.<namespace>.svc', () => {
    expect(runtimedServerName('demo', 'py')).toBe('py.demo.svc');
  });
});

describe('readyEndpointsOfSlices', () => {
  const slice = (fields: Partial<V1EndpointSlice>): V1EndpointSlice => ({
    addressType: 'IPv4',
    ports: [
      { name: 'peer', port: 7444 },
      { name: 'grpc', port: 7443 },
    ],
    endpoints: [],
    ...fields,
  });
  const pod = (name: string) => ({ kind: 'Pod', name });

  it.each<[string, V1EndpointSlice[], unknown]>([
    [
      'ready endpoints at the grpc port, sorted by IP, with their Pods',
      [
        slice({
          endpoints: [
            { addresses: ['10.0.0.2'], conditions: { ready: true }, targetRef: pod('b') },
            { addresses: ['10.0.0.1'], conditions: { ready: true }, targetRef: pod('a') },
          ],
        }),
      ],
      [
        { address: '10.0.0.1:7443', ip: '10.0.0.1', pod: 'a' },
        { address: '10.0.0.2:7443', ip: '10.0.0.2', pod: 'b' },
      ],
    ],
    [
      'unset readiness means ready (the API says so)',
      [slice({ endpoints: [{ addresses: ['10.0.0.1'] }] })],
      [{ address: '10.0.0.1:7443', ip: '10.0.0.1' }],
    ],
    [
      'not ready or terminating endpoints are left out',
      [
        slice({
          endpoints: [
            { addresses: ['10.0.0.1'], conditions: { ready: false } },
            { addresses: ['10.0.0.2'], conditions: { ready: true, terminating: true } },
          ],
        }),
      ],
      [],
    ],
    [
      'a slice without the grpc port is left out',
      [slice({ ports: [{ name: 'peer', port: 7444 }], endpoints: [{ addresses: ['10.0.0.1'] }] })],
      [],
    ],
    ['an FQDN slice is left out', [slice({ addressType: 'FQDN', endpoints: [{ addresses: ['runtimed.example'] }] })], []],
    [
      'one endpoint per IP across slices (a Pod moved between slices)',
      [slice({ endpoints: [{ addresses: ['10.0.0.1'] }] }), slice({ endpoints: [{ addresses: ['10.0.0.1'] }] })],
      [{ address: '10.0.0.1:7443', ip: '10.0.0.1' }],
    ],
    [
      'IPv6 addresses in brackets',
      [slice({ addressType: 'IPv6', endpoints: [{ addresses: ['fd00::1'] }] })],
      [{ address: '[fd00::1]:7443', ip: 'fd00::1' }],
    ],
  ])('%s', (_what, slices, endpoints) => {
    expect(readyEndpointsOfSlices(slices)).toEqual(endpoints);
  });
});
