import { parseStaleRecoveryFlags, staleRecoveryConfig } from './config.ts';

const config = (argv: string[], env: NodeJS.ProcessEnv = {}) => staleRecoveryConfig(parseStaleRecoveryFlags(argv), env);

describe('staleRecoveryConfig', () => {
  it('has the defaults of the flags and the Lease in POD_NAMESPACE', () => {
    expect(config([], { POD_NAMESPACE: 'platform' })).toEqual({
      kubeconfig: undefined,
      namespace: undefined,
      leaderElection: {
        namespace: 'platform',
        leaseName: 'kruntimes-stale-recovery',
        leaseDurationSeconds: 15,
        renewDeadlineSeconds: 10,
        retryPeriodSeconds: 2,
      },
      metricsAddress: undefined,
      healthAddress: undefined,
      workers: 2,
      resyncMs: 300_000,
      automaticRetry: true,
    });
  });

  it.each<[string[], NodeJS.ProcessEnv, Partial<ReturnType<typeof config>>]>([
    [['--kubeconfig', '/k', '--namespace', 'demo'], {}, { kubeconfig: '/k', namespace: 'demo' }],
    [['--metrics-address', ':8080', '--health-address', ':8081'], {}, { metricsAddress: ':8080', healthAddress: ':8081' }],
    [['--workers', '4', '--resync', '0'], {}, { workers: 4, resyncMs: 0 }],
    [['--resync', '1.5'], {}, { resyncMs: 1_500 }],
    [[], { KRT_AUTOMATIC_RETRY: 'false' }, { automaticRetry: false }],
    // The flag wins over the environment.
    [['--automatic-retry', 'true'], { KRT_AUTOMATIC_RETRY: 'false' }, { automaticRetry: true }],
  ])('%j with %j', (argv, env, expected) => {
    expect(config(argv, env)).toMatchObject(expected);
  });

  it.each<[string[], NodeJS.ProcessEnv, string]>([
    [['--workers', '0'], {}, '--workers must be a positive number, not "0"'],
    [['--resync=-1'], {}, '--resync must be a non-negative number, not "-1"'],
    [['--resync', 'often'], {}, '--resync must be a non-negative number, not "often"'],
    [['--automatic-retry', 'maybe'], {}, '--automatic-retry must be true or false, not "maybe"'],
    [[], { KRT_AUTOMATIC_RETRY: 'yes' }, '--automatic-retry must be true or false, not "yes"'],
    [['--lease-duration-seconds', '0'], {}, '--lease-duration-seconds must be a positive number, not "0"'],
    [['--bogus'], {}, "Unknown option '--bogus'"],
  ])('refuses %j with %j: %s', (argv, env, message) => {
    expect(() => config(argv, env)).toThrow(message);
  });
});
