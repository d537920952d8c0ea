// runtime-gateway: wiring only (logic in @kruntimes/gateway-core). Flags, their defaults and
// checks: parseGatewayFlags and gatewayConfig in libs/gateway-core/src/config.ts. Tracing: spans
// exported over OTLP (HTTP/protobuf) when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; off (no SDK at all) otherwise.
import {
  Gateway,
  UsageError,
  decideShutdownDelayMs,
  gatewayConfig,
  parseGatewayFlags,
  startMetricsServer,
  startUpstreamResolver,
} from '@kruntimes/gateway-core';
import type { GatewayFlags, MetricsServer, UpstreamResolver } from '@kruntimes/gateway-core';
import { exitAfterFlush, stopOnSignals } from '@kruntimes/host';
import { startTracing } from '@kruntimes/tracing';
import { pino } from 'pino';

/** The flags, or a usage error on stderr and exit 2 (no stack trace: the user mistyped a flag). */
function flagsOrUsage(): GatewayFlags {
  try {
    return parseGatewayFlags(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`runtime-gateway: ${error.message}\n`);
    process.exit(2);
  }
}

const flags = flagsOrUsage();

// Asynchronous writes (coalesced while one is in flight): a log line never blocks the
// invoke path on a write(2). Access lines are also gathered up to 4 KiB and written
// together (under load one write per dozen requests instead of one each), but never held
// longer than LOG_FLUSH_MS. pino flushes what is left when the process exits.
const LOG_FLUSH_MS = 100;
const logDestination = pino.destination({ sync: false, minLength: 4096 });
const flushTimer = setInterval(() => {
  logDestination.flush();
}, LOG_FLUSH_MS).unref();
/** Ends the log: the flush timer first, since a flush of an ended destination throws (and the exit code would be 1). */
const endLog = (code: number): Promise<never> => {
  clearInterval(flushTimer);
  return exitAfterFlush(logDestination, code);
};
const logger = pino(
  {
    name: 'runtime-gateway',
    level: flags['log-level'] ?? process.env.KRT_LOG_LEVEL ?? 'info',
    // The gateway never logs headers; this is the belt to that rule's braces.
    redact: ['authorization', '*.authorization', 'headers', '*.headers', 'token', '*.token'],
  },
  logDestination,
);

let metrics: MetricsServer | undefined;
let resolver: UpstreamResolver | undefined;
const tracing = await startTracing('kruntimes-runtime-gateway');
try {
  const config = gatewayConfig(flags);
  resolver = await startUpstreamResolver(config, logger);
  if (config.metricsAddress !== undefined) {
    metrics = await startMetricsServer(config.metricsAddress.host, config.metricsAddress.port);
    logger.info({ address: metrics.address }, 'metrics listening (plaintext, no credentials accepted)');
  }
  const gateway = await Gateway.start({
    ...config.listen,
    tlsCertFile: config.tlsCertFile,
    tlsKeyFile: config.tlsKeyFile,
    runtimedCaFile: config.runtimedCaFile,
    resolver,
    logger,
    ...(metrics === undefined ? {} : { metrics: metrics.metrics }),
    ...(tracing === undefined ? {} : { tracer: tracing.tracer }),
  });
  if (tracing !== undefined) logger.info('tracing on: exporting spans over OTLP');
  void stopOnSignals(logger, async (signal) => {
    const { shutdownDelaySeconds, drainSeconds } = config;
    await gateway.stop({ delayMs: decideShutdownDelayMs(signal, shutdownDelaySeconds), drainMs: drainSeconds * 1000 });
    await metrics?.shutdown();
    // After the drain: the last requests' spans are exported too.
    await tracing?.shutdown();
  }).then(endLog);
} catch (error) {
  logger.fatal({ err: error }, 'runtime-gateway failed to start');
  // Nothing may keep the process alive (the resolver's watches, the metrics listener).
  await resolver?.stop();
  await metrics?.shutdown();
  await tracing?.shutdown();
  process.exitCode = 1;
}
