import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { DEFAULTS } from '@kruntimes/api';
import { stopOnSignals } from '@kruntimes/host';
import { startTracing } from '@kruntimes/tracing';
import type { Tracer } from '@kruntimes/tracing';
import { healthV1, runtimeServerV1 } from '@kruntimes/proto';
import { createServer } from 'nice-grpc';
import { pino } from 'pino';
import type { Logger } from 'pino';
import type { LanguageAdapter } from './adapter.ts';
import { ArtifactEndpoint, artifactEndpointHost } from './artifact-endpoint.ts';
import { systemClock } from './clock.ts';
import { ExecutionService } from './execution-service.ts';
import { FunctionService } from './function-service.ts';
import { errorMiddleware } from './grpc-errors.ts';
import { runtimeServerService } from './grpc-service.ts';
import { HealthService } from './health-service.ts';
import { checkListenAddress } from './listen-address.ts';

export interface RuntimeServerOptions {
  readonly adapter: LanguageAdapter;
  /** `127.0.0.1:7450`, `[::1]:0`, `unix:/run/kruntimes/runtime-server.sock`. */
  readonly listen: string;
  readonly logger: Logger;
  /** Tracing on: spans of each invocation (startTracing of @kruntimes/tracing); undefined: none. */
  readonly tracer?: Tracer | undefined;
}

export interface RunningRuntimeServer {
  /** The bound port (0 for a unix socket). */
  readonly port: number;
  /** Stops accepting calls, ends every function and execution, closes the listener. */
  shutdown(): Promise<void>;
}

/** Starts a Runtime Server for one language on a loopback address or unix socket. */
export async function startRuntimeServer(options: RuntimeServerOptions): Promise<RunningRuntimeServer> {
  const listen = checkListenAddress(options.listen);
  const { adapter, logger } = options;
  const functions = new FunctionService({
    adapter,
    logger,
    clock: systemClock,
    newId: () => `reg-${randomUUID()}`,
    tracer: options.tracer,
  });
  // Same loopback host as the gRPC listener (127.0.0.1 for a unix socket), an ephemeral port.
  const artifacts = await ArtifactEndpoint.start(artifactEndpointHost(listen), logger);
  const executions = new ExecutionService({ adapter, logger, clock: systemClock, artifacts });
  const health = new HealthService([runtimeServerV1.RuntimeServerDefinition.fullName]);
  const server = createServer().use(errorMiddleware(logger));
  server.add(runtimeServerV1.RuntimeServerDefinition, runtimeServerService(functions, executions));
  server.add(healthV1.HealthDefinition, health.implementation());
  const port = await server.listen(listen);
  logger.info({ listen, port, language: adapter.language }, 'runtime server listening');
  let stopping: Promise<void> | undefined;
  return {
    port,
    shutdown() {
      stopping ??= (async () => {
        health.setNotServing();
        await Promise.all([functions.close(), executions.close()]);
        await server.shutdown();
        await artifacts.close();
        logger.info('runtime server stopped');
      })();
      return stopping;
    },
  };
}

/**
 * Entry point of a Runtime Server process: flags, environment, pino logger, signals.
 *   --listen ADDRESS   (env KRT_LISTEN; default 127.0.0.1:7450)
 *   --log-level LEVEL  (env KRT_LOG_LEVEL; default info)
 * Tracing: spans exported over OTLP (HTTP/protobuf) as service `kruntimes-<name>` when
 * OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; off otherwise.
 */
export async function runRuntimeServerMain(name: string, createAdapter: (logger: Logger) => Promise<LanguageAdapter>): Promise<void> {
  const { values } = parseArgs({
    options: { listen: { type: 'string' }, 'log-level': { type: 'string' } },
    strict: true,
  });
  const logger = pino({
    name,
    level: values['log-level'] ?? process.env.KRT_LOG_LEVEL ?? 'info',
    // Logs never carry credentials; this is the belt to that rule's braces.
    redact: ['*.authorization', '*.token', 'env'],
  });
  const tracing = await startTracing(`kruntimes-${name}`);
  try {
    const adapter = await createAdapter(logger);
    const server = await startRuntimeServer({
      adapter,
      listen: values.listen ?? process.env.KRT_LISTEN ?? `127.0.0.1:${DEFAULTS.runtimeServerPort}`,
      logger,
      tracer: tracing?.tracer,
    });
    if (tracing !== undefined) logger.info('tracing on: exporting spans over OTLP');
    void stopOnSignals(logger, async () => {
      await server.shutdown();
      // After the last invocation ended: its spans are exported too.
      await tracing?.shutdown();
    }).then((code) => process.exit(code));
  } catch (error) {
    logger.fatal({ err: error }, 'runtime server failed to start');
    await tracing?.shutdown();
    process.exitCode = 1;
  }
}
