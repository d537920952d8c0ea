import type { ManagerLeaderElection } from './manager.ts';

/** The Lease flags every leader-elected service declares (each a string; unset ones undefined). */
export interface LeaseFlagValues {
  'lease-namespace'?: string | undefined;
  'lease-name'?: string | undefined;
  'lease-duration-seconds'?: string | undefined;
  'renew-deadline-seconds'?: string | undefined;
  'retry-period-seconds'?: string | undefined;
}

export interface LeaseFlagDefaults {
  /** The service's own Lease, e.g. kruntimes-scheduler. */
  leaseName: string;
  /** Checks each duration; default: a positive number. */
  seconds?: (flag: string, value: string) => number;
}

/**
 * The Lease the flags name: --lease-namespace, else POD_NAMESPACE, else kruntimes-system;
 * --lease-name; --lease-duration-seconds (default 15), --renew-deadline-seconds (10),
 * --retry-period-seconds (2).
 */
export function leaseFromFlags(
  values: LeaseFlagValues,
  env: NodeJS.ProcessEnv,
  { leaseName, seconds = positiveNumber }: LeaseFlagDefaults,
): Omit<ManagerLeaderElection, 'elector'> {
  return {
    namespace: values['lease-namespace'] ?? env.POD_NAMESPACE ?? 'kruntimes-system',
    leaseName: values['lease-name'] ?? leaseName,
    leaseDurationSeconds: seconds('lease-duration-seconds', values['lease-duration-seconds'] ?? '15'),
    renewDeadlineSeconds: seconds('renew-deadline-seconds', values['renew-deadline-seconds'] ?? '10'),
    retryPeriodSeconds: seconds('retry-period-seconds', values['retry-period-seconds'] ?? '2'),
  };
}

/** A flag's positive number, or an error naming the flag. */
export function positiveNumber(flag: string, value: string): number {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed <= 0) throw new Error(`--${flag} must be a positive number, not ${JSON.stringify(value)}`);
  return parsed;
}
