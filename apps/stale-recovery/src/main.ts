// stale-recovery: wiring only (logic in @kruntimes/stale-recovery-core).
//   --kubeconfig PATH              default: KUBECONFIG, then in-cluster
//   --namespace NS                 watch one namespace (default: all)
//   --lease-namespace NS           where the leader Lease lives (default: POD_NAMESPACE, else kruntimes-system)
//   --lease-name NAME              default: kruntimes-stale-recovery
//   --lease-duration-seconds N     default 15; --renew-deadline-seconds 10; --retry-period-seconds 2
//   --metrics-address HOST:PORT    Prometheus /metrics (default: off)
//   --health-address HOST:PORT     the kubelet's probes: /healthz (alive), /readyz (standby, or leading
//                                  with its informers synced) (default: off)
//   --resync SECONDS               look at every Run again this often (default 300; 0: never)
//   --workers N                    Runs reconciled in parallel (default 2)
//   --automatic-retry true|false   the cluster retry policy: may a retrySafe task that lost its
//                                  owner be retried automatically (default true; env
//                                  KRT_AUTOMATIC_RETRY); a namespace annotation can only narrow it
//   --log-level LEVEL              default info (env KRT_LOG_LEVEL)
import { parseArgs } from 'node:util';
import {
  Manager,
  ProcessMetrics,
  healthEndpointRunnable,
  leaseFromFlags,
  loadKubeConfig,
  metricsEndpointRunnable,
} from '@kruntimes/controller-runtime';
import { RecoveryMetrics, STALE_RECOVERY_LEASE_NAME, StaleRecovery } from '@kruntimes/stale-recovery-core';
import { pino } from 'pino';

const { values } = parseArgs({
  options: {
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
  },
  strict: true,
});

const logger = pino({
  name: 'stale-recovery',
  level: values['log-level'] ?? process.env.KRT_LOG_LEVEL ?? 'info',
  redact: ['*.authorization', '*.token'],
});

function number(flag: string, value: string, allowZero = false): number {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0 || (!allowZero && parsed === 0)) {
    throw new Error(`--${flag} must be a ${allowZero ? 'non-negative' : 'positive'} number, not ${JSON.stringify(value)}`);
  }
  return parsed;
}

function boolean(flag: string, value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new Error(`--${flag} must be true or false, not ${JSON.stringify(value)}`);
}

try {
  const automaticRetry = boolean('automatic-retry', values['automatic-retry'] ?? process.env.KRT_AUTOMATIC_RETRY ?? 'true');
  const kubeConfig = loadKubeConfig(values.kubeconfig);
  const metrics = new RecoveryMetrics();
  const processMetrics = new ProcessMetrics();
  const manager = new Manager({
    kubeConfig,
    logger,
    component: 'stale-recovery',
    leaderElection: leaseFromFlags(values, process.env, { leaseName: STALE_RECOVERY_LEASE_NAME }),
  });
  if (values['health-address'] !== undefined) manager.add(healthEndpointRunnable(values['health-address'], manager, logger));
  if (values['metrics-address'] !== undefined)
    manager.add(
      metricsEndpointRunnable(
        values['metrics-address'],
        () => metrics.render() + manager.leaderElectionMetrics.render() + processMetrics.render(),
        logger,
      ),
    );
  manager.add(
    new StaleRecovery({
      kubeConfig,
      informers: manager.informers,
      ...(values.namespace === undefined ? {} : { namespace: values.namespace }),
      logger,
      metrics,
      workers: number('workers', values.workers),
      resyncMs: number('resync', values.resync, true) * 1000,
      automaticRetry,
    }),
  );
  process.exit(await manager.runUntilSignalled());
} catch (error) {
  logger.fatal({ err: error }, 'stale-recovery failed');
  process.exitCode = 1;
}
