import { parseArgs } from 'node:util';
import { leaseFromFlags, positiveNumber } from '@kruntimes/controller-runtime';
import type { ManagerLeaderElection } from '@kruntimes/controller-runtime';
import { STALE_RECOVERY_LEASE_NAME } from './rbac.ts';

/**
 * stale-recovery's flags (each a string; the defaults are applied here):
 *
 * | flag | meaning | default |
 * |---|---|---|
 * | `--kubeconfig PATH` | | KUBECONFIG, then in-cluster |
 * | `--namespace NS` | watch one namespace | all |
 * | `--lease-namespace NS` | where the leader Lease lives | POD_NAMESPACE, else kruntimes-system |
 * | `--lease-name NAME` | | kruntimes-stale-recovery |
 * | `--lease-duration-seconds N`, `--renew-deadline-seconds N`, `--retry-period-seconds N` | | 15, 10, 2 |
 * | `--metrics-address HOST:PORT` | Prometheus /metrics | off |
 * | `--health-address HOST:PORT` | the kubelet's probes: /healthz (alive), /readyz (standby, or leading with its informers synced) | off |
 * | `--resync SECONDS` | look at every Run again this often; 0: never | 300 |
 * | `--workers N` | Runs reconciled in parallel | 2 |
 * | `--automatic-retry true\|false` | the cluster retry policy: may a retrySafe task that lost its owner be retried automatically; a namespace annotation can only narrow it | true (env KRT_AUTOMATIC_RETRY) |
 * | `--log-level LEVEL` | | info (env KRT_LOG_LEVEL) |
 */
const STALE_RECOVERY_OPTIONS = {
  kubeconfig: { type: 'string' },
  namespace: { type: 'string' },
  'lease-namespace': { type: 'string' },
  'lease-name': { type: 'string' },
  'lease-duration-seconds': { type: 'string' },
  'renew-deadline-seconds': { type: 'string' },
  'retry-period-seconds': { type: 'string' },
  'metrics-address': { type: 'string' },
  'health-address': { type: 'string' },
  resync: { type: 'string', default: '300' },
  workers: { type: 'string', default: '2' },
  'automatic-retry': { type: 'string' },
  'log-level': { type: 'string' },
} as const;

export type StaleRecoveryFlags = ReturnType<typeof parseArgs<{ options: typeof STALE_RECOVERY_OPTIONS; strict: true }>>['values'];

/** The command line's flags; throws parseArgs's error on an unknown flag, a positional or a flag without its value. */
export function parseStaleRecoveryFlags(argv: readonly string[]): StaleRecoveryFlags {
  return parseArgs({ args: [...argv], options: STALE_RECOVERY_OPTIONS, strict: true }).values;
}

/** Everything the stale-recovery process runs with. */
export interface StaleRecoveryConfig {
  /** Undefined: KUBECONFIG, then in-cluster. */
  kubeconfig: string | undefined;
  namespace: string | undefined;
  leaderElection: Omit<ManagerLeaderElection, 'elector'>;
  metricsAddress: string | undefined;
  healthAddress: string | undefined;
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
    kubeconfig: flags.kubeconfig,
    namespace: flags.namespace,
    leaderElection: leaseFromFlags(flags, env, { leaseName: STALE_RECOVERY_LEASE_NAME }),
    metricsAddress: flags['metrics-address'],
    healthAddress: flags['health-address'],
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
