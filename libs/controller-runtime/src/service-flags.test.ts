import { parseServiceFlags, serviceConfig, serviceLogLevel } from './service-flags.ts';

const OWN = { workers: { type: 'string', default: '2' } } as const;

describe('parseServiceFlags and serviceConfig', () => {
  it('parses the shared flags beside the service own, with its defaults', () => {
    const flags = parseServiceFlags(['--namespace', 'demo', '--metrics-address', ':8080'], OWN);
    expect(flags).toEqual({ namespace: 'demo', 'metrics-address': ':8080', workers: '2' });
    expect(serviceConfig(flags, { POD_NAMESPACE: 'platform' }, { leaseName: 'kruntimes-x' })).toEqual({
      kubeconfig: undefined,
      namespace: 'demo',
      leaderElection: {
        namespace: 'platform',
        leaseName: 'kruntimes-x',
        leaseDurationSeconds: 15,
        renewDeadlineSeconds: 10,
        retryPeriodSeconds: 2,
      },
      metricsAddress: ':8080',
      healthAddress: undefined,
    });
  });

  it.each([
    [['--bogus'], "Unknown option '--bogus'"],
    [['--workers'], "Option '--workers <value>' argument missing"],
    [['positional'], "Unexpected argument 'positional'"],
  ])('refuses %j: %s', (argv, message) => {
    expect(() => parseServiceFlags(argv, OWN)).toThrow(message);
  });

  it.each<[Record<string, string>, NodeJS.ProcessEnv, string]>([
    [{}, {}, 'info'],
    [{}, { KRT_LOG_LEVEL: 'debug' }, 'debug'],
    [{ 'log-level': 'warn' }, { KRT_LOG_LEVEL: 'debug' }, 'warn'],
  ])('log level of %j with %j: %s', (flags, env, level) => {
    expect(serviceLogLevel(flags, env)).toBe(level);
  });
});
