import { parseArgs } from 'node:util';
import { leaseFromFlags } from './lease-flags.ts';

const FLAGS = {
  'lease-namespace': { type: 'string' },
  'lease-name': { type: 'string' },
  'lease-duration-seconds': { type: 'string' },
  'renew-deadline-seconds': { type: 'string' },
  'retry-period-seconds': { type: 'string' },
} as const;

function lease(args: string[], env: NodeJS.ProcessEnv = {}) {
  return leaseFromFlags(parseArgs({ args, options: FLAGS, strict: true }).values, env, { leaseName: 'kruntimes-x' });
}

describe('leaseFromFlags', () => {
  it('defaults to the service Lease of 15/10/2 s in POD_NAMESPACE, else kruntimes-system', () => {
    const defaults = { leaseName: 'kruntimes-x', leaseDurationSeconds: 15, renewDeadlineSeconds: 10, retryPeriodSeconds: 2 };
    expect(lease([])).toEqual({ namespace: 'kruntimes-system', ...defaults });
    expect(lease([], { POD_NAMESPACE: 'platform' })).toEqual({ namespace: 'platform', ...defaults });
  });

  it('takes the flags, fractions of a second included, and refuses what is no positive number', () => {
    expect(
      lease(['--lease-namespace', 'ns', '--lease-name', 'l', '--lease-duration-seconds', '3', '--retry-period-seconds', '0.5']),
    ).toEqual({
      namespace: 'ns',
      leaseName: 'l',
      leaseDurationSeconds: 3,
      renewDeadlineSeconds: 10,
      retryPeriodSeconds: 0.5,
    });
    expect(() => lease(['--renew-deadline-seconds', '0'])).toThrow('--renew-deadline-seconds must be a positive number, not "0"');
    expect(() => lease(['--lease-duration-seconds', 'soon'])).toThrow('--lease-duration-seconds must be a positive number, not "soon"');
  });
});
