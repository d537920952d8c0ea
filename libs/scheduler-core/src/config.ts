import { parseArgs } from 'node:util';
import { SOURCE_SNAPSHOT } from '@kruntimes/api';
import { leaseFromFlags, positiveNumber } from '@kruntimes/controller-runtime';
import type { ManagerLeaderElection } from '@kruntimes/controller-runtime';

/**
 * The scheduler's flags (each a string; the defaults are applied here):
 *
 * | flag | meaning | default |
 * |---|---|---|
 * | `--kubeconfig PATH` | | KUBECONFIG, then in-cluster |
 * | `--namespace NS` | watch one namespace | all |
 * | `--lease-namespace NS` | where the leader Lease lives | POD_NAMESPACE, else kruntimes-system |
 * | `--lease-name NAME` | | kruntimes-scheduler |
 * | `--lease-duration-seconds N`, `--renew-deadline-seconds N`, `--retry-period-seconds N` | | 15, 10, 2 |
 * | `--metrics-address HOST:PORT` | Prometheus /metrics | off |
 * | `--health-address HOST:PORT` | the kubelet's probes: /healthz (alive), /readyz (standby, or leading with its informers synced) | off |
 * | `--workers N` | Runtimes placed in parallel | 2 |
 * | `--source-wait-seconds N` | a Run whose source cannot be snapshotted (ConfigMap missing, too large, not readable) stays Pending this long, then fails | 300 |
 * | `--log-level LEVEL` | | info (env KRT_LOG_LEVEL) |
 */
const SCHEDULER_OPTIONS = {
  kubeconfig: { type: 'string' },
  namespace: { type: 'string' },
  'lease-namespace': { type: 'string' },
  'lease-name': { type: 'string' },
  'lease-duration-seconds': { type: 'string' },
  'renew-deadline-seconds': { type: 'string' },
  'retry-period-seconds': { type: 'string' },
  'metrics-address': { type: 'string' },
  'health-address': { type: 'string' },
  workers: { type: 'string', default: '2' },
  'source-wait-seconds': { type: 'string', default: String(SOURCE_SNAPSHOT.maxWaitSeconds) },
  'log-level': { type: 'string' },
} as const;

export type SchedulerFlags = ReturnType<typeof parseArgs<{ options: typeof SCHEDULER_OPTIONS; strict: true }>>['values'];

/** The command line's flags; throws parseArgs's error on an unknown flag, a positional or a flag without its value. */
export function parseSchedulerFlags(argv: readonly string[]): SchedulerFlags {
  return parseArgs({ args: [...argv], options: SCHEDULER_OPTIONS, strict: true }).values;
}

/** Everything the scheduler process runs with. */
export interface SchedulerConfig {
  /** Undefined: KUBECONFIG, then in-cluster. */
  kubeconfig: string | undefined;
  namespace: string | undefined;
  leaderElection: Omit<ManagerLeaderElection, 'elector'>;
  metricsAddress: string | undefined;
  healthAddress: string | undefined;
  workers: number;
  sourceWaitMs: number;
}

/** The flags checked; an error names the flag and the value it refused. */
export function schedulerConfig(flags: SchedulerFlags, env: NodeJS.ProcessEnv): SchedulerConfig {
  return {
    kubeconfig: flags.kubeconfig,
    namespace: flags.namespace,
    leaderElection: leaseFromFlags(flags, env, { leaseName: 'kruntimes-scheduler' }),
    metricsAddress: flags['metrics-address'],
    healthAddress: flags['health-address'],
    workers: positiveNumber('workers', flags.workers),
    sourceWaitMs: positiveNumber('source-wait-seconds', flags['source-wait-seconds']) * 1000,
  };
}
