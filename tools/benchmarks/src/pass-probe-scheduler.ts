/**
 * The scheduler as its own process for pass-bench.ts: main.ts's Scheduler (no leader
 * election, one replica) with each pass timed from outside (its reconcile wrapped), the
 * event loop's delay sampled, and both served as JSON on GET /stats:
 *   node tools/benchmarks/src/pass-probe-scheduler.ts KUBECONFIG NAMESPACE PORT
 */
import { createServer } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { KubeConfig } from '@kubernetes/client-node';
import { Scheduler, SchedulerMetrics } from '@kruntimes/scheduler-core';
import { pino } from 'pino';

const [kubeconfig = '', namespace = '', port = ''] = process.argv.slice(2);
const logger = pino({ name: 'scheduler', level: process.env.KRT_LOG_LEVEL ?? 'warn' });
const kubeConfig = new KubeConfig();
kubeConfig.loadFromFile(kubeconfig);
const metrics = new SchedulerMetrics();
const scheduler = new Scheduler({ kubeConfig, namespace, logger, metrics });
const passes: number[] = [];
const reconcile = scheduler.reconcile.bind(scheduler);
scheduler.reconcile = async (key) => {
  const started = performance.now();
  try {
    return await reconcile(key);
  } finally {
    passes.push(performance.now() - started);
  }
};
const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();
const server = createServer((_request, response) => {
  const cpu = process.cpuUsage();
  response.setHeader('content-type', 'application/json');
  response.end(
    JSON.stringify({
      passes,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      rssMiB: process.memoryUsage().rss / 2 ** 20,
      loopDelayMs: { p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 },
      metrics: metrics.render(),
    }),
  );
});
await new Promise<void>((resolve) => server.listen(Number(port), '127.0.0.1', resolve));
await scheduler.start();
process.once('SIGTERM', () => {
  server.close();
  void scheduler.stop().then(() => process.exit(0));
});
