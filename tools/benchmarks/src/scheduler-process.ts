/**
 * The scheduler as its own process for the benchmark's serial round, wired as main.ts
 * wires it (a kubeconfig file, pino, the metrics endpoint) but with a bind concurrency,
 * which main.ts does not expose; one replica, so no leader election:
 *   node tools/benchmarks/src/scheduler-process.ts KUBECONFIG NAMESPACE METRICS_PORT BIND_CONCURRENCY
 */
import { KubeConfig } from '@kubernetes/client-node';
import { startMetricsEndpoint } from '@kruntimes/controller-runtime';
import { Scheduler, SchedulerMetrics } from '@kruntimes/scheduler-core';
import { pino } from 'pino';

const [kubeconfig = '', namespace = '', metricsPort = '', bindConcurrency = '16'] = process.argv.slice(2);
const logger = pino({ name: 'scheduler', level: process.env.KRT_LOG_LEVEL ?? 'info' });
const kubeConfig = new KubeConfig();
kubeConfig.loadFromFile(kubeconfig);
const metrics = new SchedulerMetrics();
await startMetricsEndpoint(`127.0.0.1:${metricsPort}`, () => metrics.render());
const scheduler = new Scheduler({ kubeConfig, namespace, logger, metrics, bindConcurrency: Number(bindConcurrency) });
await scheduler.start();
process.once('SIGTERM', () => {
  void scheduler.stop().then(() => process.exit(0));
});
