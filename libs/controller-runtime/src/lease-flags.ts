import type { ManagerLeaderElection } from './manager.ts';

/**
 * The flags of a leader-elected service's Lease, for parseArgs (`leaseName`: the service's
 * default): --lease-namespace, --lease-name, --lease-duration-seconds (15),
 * --renew-deadline-seconds (10), --retry-period-seconds (2).
 */
export function leaseFlags(leaseName: string) {
  return {
    'lease-namespace': { type: 'string' },
    'lease-name': { type: 'string', default: leaseName },
    'lease-duration-seconds': { type: 'string', default: '15' },
    'renew-deadline-seconds': { type: 'string', default: '10' },
    'retry-period-seconds': { type: 'string', default: '2' },
  } as const;
}

export interface LeaseFlagValues {
  'lease-namespace'?: string | undefined;
  'lease-name': string;
  'lease-duration-seconds': string;
  'renew-deadline-seconds': string;
  'retry-period-seconds': string;
}

/**
 * The Lease the flags name, in --lease-namespace, else POD_NAMESPACE, else
 * kruntimes-system; `seconds` checks each duration (default: a positive number).
 */
export function leaseFromFlags(
  values: LeaseFlagValues,
  env: NodeJS.ProcessEnv,
  seconds: (flag: string, value: string) => number = positiveNumber,
): Omit<ManagerLeaderElection, 'elector'> {
  return {
    namespace: values['lease-namespace'] ?? env.POD_NAMESPACE ?? 'kruntimes-system',
    leaseName: values['lease-name'],
    leaseDurationSeconds: seconds('lease-duration-seconds', values['lease-duration-seconds']),
    renewDeadlineSeconds: seconds('renew-deadline-seconds', values['renew-deadline-seconds']),
    retryPeriodSeconds: seconds('retry-period-seconds', values['retry-period-seconds']),
  };
}

/** A flag's positive number, or an error naming the flag. */
export function positiveNumber(flag: string, value: string): number {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed <= 0) throw new Error(`--${flag} must be a positive number, not ${JSON.stringify(value)}`);
  return parsed;
}
