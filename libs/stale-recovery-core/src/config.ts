import { parseServiceFlags, positiveNumber, serviceConfig } from '@kruntimes/controller-runtime';
import type { ServiceConfig, ServiceFlags } from '@kruntimes/controller-runtime';
import { STALE_RECOVERY_LEASE_NAME } from './rbac.ts';

/**
 * stale-recovery's own flags (each a string), beside controller-runtime's SERVICE_OPTIONS
 * (kubeconfig, namespace, the Lease, metrics and health addresses, log level; its Lease:
 * kruntimes-stale-recovery):
 *
 * | flag | meaning | default |
 * |---|---|---|
 * | `--resync SECONDS` | look at every Run again this often; 0: never | 300 |
 * | `--workers N` | Runs reconciled in parallel | 2 |
 * | `--automatic-retry true\|false` | the cluster retry policy: may a retrySafe task that lost its owner be retried automatically; a namespace annotation can only narrow it | true (env KRT_AUTOMATIC_RETRY) |
 */
const STALE_RECOVERY_OPTIONS = {
  resync: { type: 'string', default: '300' },
  workers: { type: 'string', default: '2' },
  'automatic-retry': { type: 'string' },
} as const;

export type StaleRecoveryFlags = ServiceFlags<typeof STALE_RECOVERY_OPTIONS>;

/** The command line's flags; throws parseArgs's error on an unknown flag, a positional or a flag without its value. */
export function parseStaleRecoveryFlags(argv: readonly string[]): StaleRecoveryFlags {
  return parseServiceFlags(argv, STALE_RECOVERY_OPTIONS);
}

/** Everything the stale-recovery process runs with. */
export interface StaleRecoveryConfig extends ServiceConfig {
  workers: number;
  /** 0: no periodic resync. */
  resyncMs: number;
  automaticRetry: boolean;
}

/** The flags checked; an error names the flag and the value it refused. */
export function staleRecoveryConfig(flags: StaleRecoveryFlags, env: NodeJS.ProcessEnv): StaleRecoveryConfig {
  const automaticRetry = flags['automatic-retry'] ?? env.KRT_AUTOMATIC_RETRY ?? 'true';
  if (automaticRetry !== 'true' && automaticRetry !== 'false')
    throw new Error(`--automatic-retry must be true or false, not ${JSON.stringify(automaticRetry)}`);
  return {
    ...serviceConfig(flags, env, { leaseName: STALE_RECOVERY_LEASE_NAME }),
    workers: positiveNumber('workers', flags.workers),
    resyncMs: nonNegativeNumber('resync', flags.resync) * 1000,
    automaticRetry: automaticRetry === 'true',
  };
}

/** 0 is a setting here (no resync), so positiveNumber does not fit. */
function nonNegativeNumber(flag: string, value: string): number {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0) throw new Error(`--${flag} must be a non-negative number, not ${JSON.stringify(value)}`);
  return parsed;
}
