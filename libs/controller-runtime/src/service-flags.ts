import { parseArgs } from 'node:util';
import type { ParseArgsOptionsConfig } from 'node:util';
import { leaseFromFlags } from './lease-flags.ts';
import type { LeaseFlagDefaults } from './lease-flags.ts';
import type { ManagerLeaderElection } from './manager.ts';

/**
 * The flags every leader-elected service (scheduler, stale-recovery, controller-manager)
 * declares beside its own (each a string; the defaults are applied by serviceConfig):
 *
 * | flag | meaning | default |
 * |---|---|---|
 * | `--kubeconfig PATH` | | KUBECONFIG, then in-cluster |
 * | `--namespace NS` | watch one namespace | all |
 * | `--lease-namespace NS` | where the leader Lease lives | POD_NAMESPACE, else kruntimes-system |
 * | `--lease-name NAME` | | the service's own Lease, e.g. kruntimes-scheduler |
 * | `--lease-duration-seconds N`, `--renew-deadline-seconds N`, `--retry-period-seconds N` | | 15, 10, 2 |
 * | `--metrics-address HOST:PORT` | Prometheus /metrics (plaintext) | off |
 * | `--health-address HOST:PORT` | the kubelet's probes: /healthz (alive), /readyz (standby, or leading with its informers synced) | off |
 * | `--log-level LEVEL` | | info (env KRT_LOG_LEVEL) |
 */
export const SERVICE_OPTIONS = {
  kubeconfig: { type: 'string' },
  namespace: { type: 'string' },
  'lease-namespace': { type: 'string' },
  'lease-name': { type: 'string' },
  'lease-duration-seconds': { type: 'string' },
  'renew-deadline-seconds': { type: 'string' },
  'retry-period-seconds': { type: 'string' },
  'metrics-address': { type: 'string' },
  'health-address': { type: 'string' },
  'log-level': { type: 'string' },
} as const satisfies ParseArgsOptionsConfig;

/** The shared flags as given: unset ones are undefined. */
export type ServiceFlagValues = Partial<Record<keyof typeof SERVICE_OPTIONS, string | undefined>>;

/** The values parseArgs gives for the shared flags and a service's own. */
export type ServiceFlags<Own extends ParseArgsOptionsConfig> = ReturnType<
  typeof parseArgs<{ options: typeof SERVICE_OPTIONS & Own; strict: true }>
>['values'];

/**
 * The command line's flags, the shared ones and the service's own; throws parseArgs's error
 * on an unknown flag, a positional or a flag without its value.
 */
export function parseServiceFlags<const Own extends ParseArgsOptionsConfig>(argv: readonly string[], own: Own): ServiceFlags<Own> {
  return parseArgs({ args: [...argv], options: { ...SERVICE_OPTIONS, ...own }, strict: true }).values;
}

/** What every leader-elected service runs with, beside its own settings. */
export interface ServiceConfig {
  /** Undefined: KUBECONFIG, then in-cluster. */
  kubeconfig: string | undefined;
  namespace: string | undefined;
  leaderElection: Omit<ManagerLeaderElection, 'elector'>;
  metricsAddress: string | undefined;
  healthAddress: string | undefined;
}

/** The shared flags checked (the Lease's by leaseFromFlags); an error names the flag and the value it refused. */
export function serviceConfig(flags: ServiceFlagValues, env: NodeJS.ProcessEnv, lease: LeaseFlagDefaults): ServiceConfig {
  return {
    kubeconfig: flags.kubeconfig,
    namespace: flags.namespace,
    leaderElection: leaseFromFlags(flags, env, lease),
    metricsAddress: flags['metrics-address'],
    healthAddress: flags['health-address'],
  };
}

/** --log-level, else KRT_LOG_LEVEL, else info. */
export function serviceLogLevel(flags: ServiceFlagValues, env: NodeJS.ProcessEnv): string {
  return flags['log-level'] ?? env.KRT_LOG_LEVEL ?? 'info';
}
