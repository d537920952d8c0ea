import { SOURCE_SNAPSHOT } from '@kruntimes/api';
import { parseServiceFlags, positiveNumber, serviceConfig } from '@kruntimes/controller-runtime';
import type { ServiceConfig, ServiceFlags } from '@kruntimes/controller-runtime';

/**
 * The scheduler's own flags (each a string), beside controller-runtime's SERVICE_OPTIONS
 * (kubeconfig, namespace, the Lease, metrics and health addresses, log level; its Lease:
 * kruntimes-scheduler):
 *
 * | flag | meaning | default |
 * |---|---|---|
 * | `--workers N` | Runtimes placed in parallel | 2 |
 * | `--source-wait-seconds N` | a Run whose source cannot be snapshotted (ConfigMap missing, too large, not readable) stays Pending this long, then fails | 300 |
 */
const SCHEDULER_OPTIONS = {
  workers: { type: 'string', default: '2' },
  'source-wait-seconds': { type: 'string', default: String(SOURCE_SNAPSHOT.maxWaitSeconds) },
} as const;

export type SchedulerFlags = ServiceFlags<typeof SCHEDULER_OPTIONS>;

/** The command line's flags; throws parseArgs's error on an unknown flag, a positional or a flag without its value. */
export function parseSchedulerFlags(argv: readonly string[]): SchedulerFlags {
  return parseServiceFlags(argv, SCHEDULER_OPTIONS);
}

/** Everything the scheduler process runs with. */
export interface SchedulerConfig extends ServiceConfig {
  workers: number;
  sourceWaitMs: number;
}

/** The flags checked; an error names the flag and the value it refused. */
export function schedulerConfig(flags: SchedulerFlags, env: NodeJS.ProcessEnv): SchedulerConfig {
  return {
    ...serviceConfig(flags, env, { leaseName: 'kruntimes-scheduler' }),
    workers: positiveNumber('workers', flags.workers),
    sourceWaitMs: positiveNumber('source-wait-seconds', flags['source-wait-seconds']) * 1000,
  };
}
