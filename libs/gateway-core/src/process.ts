import { startTracing } from '@kruntimes/tracing';
import type { Tracing } from '@kruntimes/tracing';
import type { Logger } from 'pino';
import { gatewayConfig, startUpstreamResolver } from './config.ts';
import type { GatewayConfig, GatewayFlags } from './config.ts';
import { Gateway } from './gateway.ts';
import { startMetricsServer } from './metrics.ts';
import type { MetricsServer } from './metrics.ts';
import type { UpstreamResolver } from './resolver.ts';
import { decideShutdownDelayMs } from './shutdown.ts';

/** A started gateway process: its listener, upstream resolver, metrics endpoint and tracing. */
export interface GatewayProcess {
  /** Drains the gateway (after the delay decideShutdownDelayMs gives the signal), then stops metrics, then tracing. */
  stop(signal: NodeJS.Signals | undefined): Promise<void>;
}

/** What has started so far: stopped again when a later part fails. */
interface Started {
  tracing: Tracing | undefined;
  resolver?: UpstreamResolver;
  metrics?: MetricsServer;
}

/**
 * The gateway process from its flags: tracing (spans exported over OTLP when
 * OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set), the checked
 * config, the upstream resolver, the metrics endpoint (when --metrics-address is set) and the
 * gateway. Undefined when it could not start: the reason is logged and what had started is
 * stopped, since nothing may keep a process that serves nothing alive (the resolver's watches,
 * the metrics listener).
 */
export async function startGatewayProcess(flags: GatewayFlags, logger: Logger): Promise<GatewayProcess | undefined> {
  const started: Started = { tracing: await startTracing('kruntimes-runtime-gateway') };
  try {
    return await startParts(gatewayConfig(flags), logger, started);
  } catch (error) {
    logger.fatal({ err: error }, 'runtime-gateway failed to start');
    await started.resolver?.stop();
    await started.metrics?.shutdown();
    await started.tracing?.shutdown();
    return undefined;
  }
}

async function startParts(config: GatewayConfig, logger: Logger, started: Started): Promise<GatewayProcess> {
  const { tracing } = started;
  const resolver = await startUpstreamResolver(config, logger);
  started.resolver = resolver;
  let metrics: MetricsServer | undefined;
  if (config.metricsAddress !== undefined) {
    metrics = await startMetricsServer(config.metricsAddress.host, config.metricsAddress.port);
    started.metrics = metrics;
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
  return {
    stop: async (signal) => {
      const { shutdownDelaySeconds, drainSeconds } = config;
      await gateway.stop({ delayMs: decideShutdownDelayMs(signal, shutdownDelaySeconds), drainMs: drainSeconds * 1000 });
      await metrics?.shutdown();
      // After the drain: the last requests' spans are exported too.
      await tracing?.shutdown();
    },
  };
}
