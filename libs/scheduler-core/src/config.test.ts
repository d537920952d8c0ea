import { parseSchedulerFlags, schedulerConfig } from './config.ts';

const config = (argv: string[], env: NodeJS.ProcessEnv = {}) => schedulerConfig(parseSchedulerFlags(argv), env);

describe('schedulerConfig', () => {
  it('has the defaults of the flags and the Lease in POD_NAMESPACE', () => {
    expect(config([], { POD_NAMESPACE: 'platform' })).toEqual({
      kubeconfig: undefined,
      namespace: undefined,
      leaderElection: {
        namespace: 'platform',
        leaseName: 'kruntimes-scheduler',
        leaseDurationSeconds: 15,
        renewDeadlineSeconds: 10,
        retryPeriodSeconds: 2,
      },
      metricsAddress: undefined,
      healthAddress: undefined,
      workers: 2,
      sourceWaitMs: 300_000,
    });
  });

  it.each<[string[], Partial<ReturnType<typeof config>>]>([
    [['--kubeconfig', '/k', '--namespace', 'demo'], { kubeconfig: '/k', namespace: 'demo' }],
    [['--metrics-address', ':8080', '--health-address', ':8081'], { metricsAddress: ':8080', healthAddress: ':8081' }],
    [['--workers', '8', '--source-wait-seconds', '0.5'], { workers: 8, sourceWaitMs: 500 }],
    [
      ['--lease-namespace', 'ops', '--lease-name', 'mine', '--lease-duration-seconds', '30'],
      {
        leaderElection: { namespace: 'ops', leaseName: 'mine', leaseDurationSeconds: 30, renewDeadlineSeconds: 10, retryPeriodSeconds: 2 },
      },
    ],
  ])('%j', (argv, expected) => {
    expect(config(argv)).toMatchObject(expected);
  });

  it.each([
    [['--workers', '0'], '--workers must be a positive number, not "0"'],
    [['--source-wait-seconds', 'never'], '--source-wait-seconds must be a positive number, not "never"'],
    [['--renew-deadline-seconds=-1'], '--renew-deadline-seconds must be a positive number, not "-1"'],
    [['--bogus'], "Unknown option '--bogus'"],
  ])('refuses %j: %s', (argv, message) => {
    expect(() => config(argv)).toThrow(message);
  });
});
