import { DnsResolver, runtimedServerName } from './resolver.ts';

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
