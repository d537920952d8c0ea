// runtimed: wiring only (logic in @kruntimes/runtimed-core). Configuration: environment
// variables, see loadConfig in libs/runtimed-core/src/config.ts. Tracing: spans exported over
// OTLP (HTTP/protobuf) when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set.
import { PooledKubeConfig } from '@kruntimes/controller-runtime';
import { exitAfterFlush, stopOnSignals } from '@kruntimes/host';
import { NO_METRICS, loadConfig, startPrometheusMetrics, startRuntimed } from '@kruntimes/runtimed-core';
import { startTracing } from '@kruntimes/tracing';
import { pino } from 'pino';

// Synchronous writes: a line is in the log when the event it records is visible (tests
// and operators read the log right after a status change or an answer). Asynchronous
// writes cost ~5% less CPU per invoke; that needs every reader to wait for its line first.
const logDestination = pino.destination({ sync: true });
const logger = pino(
  {
    name: 'runtimed',
    level: process.env.KRT_LOG_LEVEL ?? 'info',
    // Logs never carry credentials; this is the belt to that rule's braces.
    redact: ['*.authorization', '*.token', 'env', '*.env'],
  },
  logDestination,
);

const tracing = await startTracing('kruntimes-runtimed');
try {
  const config = loadConfig(process.env);
  const kubeConfig = new PooledKubeConfig();
  // On the local node the service-account files live under the container root.
  kubeConfig.loadFromCluster(config.containerRoot === '' ? undefined : config.containerRoot);
  // Served on the Pod IP like the gRPC port; KRT_METRICS_PORT=0 turns it off.
  const prometheus = config.metricsPort === 0 ? undefined : await startPrometheusMetrics(config.pod.ip, config.metricsPort);
  const runtimed = await startRuntimed({
    config,
    kubeConfig,
    logger: logger.child({ pod: config.pod.name }),
    metrics: prometheus?.metrics ?? NO_METRICS,
    ...(tracing === undefined ? {} : { tracer: tracing.tracer }),
  });
  if (tracing !== undefined) logger.info('tracing on: exporting spans over OTLP');
  void stopOnSignals(logger, async () => {
    // A Pod told to stop drains first (within its grace period, which the kubelet ends with SIGKILL).
    await runtimed.drain();
    await runtimed.stop();
    await prometheus?.shutdown();
    await tracing?.shutdown();
  }).then((code) => exitAfterFlush(logDestination, code));
} catch (error) {
  logger.fatal({ err: error }, 'runtimed failed to start');
  await tracing?.shutdown();
  // Exited, not left to the event loop: what started before the failure (the metrics
  // server, client sockets) would keep a process that serves nothing alive, and the Pod's
  // restart policy would never start runtimed again (e.g. after a start without the API server).
  await exitAfterFlush(logDestination, 1);
}
