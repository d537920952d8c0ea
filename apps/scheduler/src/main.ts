// scheduler: wiring only (logic in @kruntimes/scheduler-core).
//   --kubeconfig PATH              default: KUBECONFIG, then in-cluster
//   --namespace NS                 watch one namespace (default: all)
//   --lease-namespace NS           where the leader Lease lives (default: POD_NAMESPACE, else kruntimes-system)
//   --lease-name NAME              default: kruntimes-scheduler
//   --lease-duration-seconds N     default 15; --renew-deadline-seconds 10; --retry-period-seconds 2
//   --metrics-address HOST:PORT    Prometheus /metrics (default: off)
//   --health-address HOST:PORT     the kubelet's probes: /healthz (alive), /readyz (standby, or leading
//                                  with its informers synced) (default: off)
//   --workers N                    Runtimes placed in parallel (default 2)
//   --source-wait-seconds N        a Run whose source cannot be snapshotted (ConfigMap missing, too large,
//                                  not readable) stays Pending this long, then fails (default 300)
//   --log-level LEVEL              default info (env KRT_LOG_LEVEL)
import { SOURCE_SNAPSHOT } from '@kruntimes/api';
import { parseArgs } from 'node:util';
import {
  Manager,
  ProcessMetrics,
  healthEndpointRunnable,
  leaseFromFlags,
  loadKubeConfig,
  metricsEndpointRunnable,
  positiveNumber,
} from '@kruntimes/controller-runtime';
import { Scheduler, SchedulerMetrics } from '@kruntimes/scheduler-core';
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
    workers: { type: 'string', default: '2' },
    'source-wait-seconds': { type: 'string', default: String(SOURCE_SNAPSHOT.maxWaitSeconds) },
    'log-level': { type: 'string' },
  },
  strict: true,
});

const logger = pino({
  name: 'scheduler',
  level: values['log-level'] ?? process.env.KRT_LOG_LEVEL ?? 'info',
  redact: ['*.authorization', '*.token'],
});

try {
  const kubeConfig = loadKubeConfig(values.kubeconfig);
  const metrics = new SchedulerMetrics();
  const processMetrics = new ProcessMetrics();
  const manager = new Manager({
    kubeConfig,
    logger,
    component: 'the scheduler',
    leaderElection: leaseFromFlags(values, process.env, { leaseName: 'kruntimes-scheduler' }),
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
    new Scheduler({
      kubeConfig,
      informers: manager.informers,
      ...(values.namespace === undefined ? {} : { namespace: values.namespace }),
      logger,
      metrics,
      workers: positiveNumber('workers', values.workers),
      sourceWaitMs: positiveNumber('source-wait-seconds', values['source-wait-seconds']) * 1000,
    }),
  );
  process.exit(await manager.runUntilSignalled());
} catch (error) {
  logger.fatal({ err: error }, 'scheduler failed');
  process.exitCode = 1;
}
