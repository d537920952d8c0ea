import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
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
import { apiTokenMiddleware, writeApiToken } from './api-token.ts';
import { RunWall } from './run-wall.ts';
import type { UidRange } from './uid-pool.ts';

export interface RuntimeServerOptions {
  readonly adapter: LanguageAdapter;
  /** `127.0.0.1:7450`, `[::1]:0`, `unix:/run/kruntimes/runtime-server.sock`. */
  readonly listen: string;
  readonly logger: Logger;
  /** Tracing on: spans of each invocation (startTracing of @kruntimes/tracing); undefined: none. */
  readonly tracer?: Tracer | undefined;
  /** Each Run its own uid from this range (KRT_RUN_UIDS); undefined: every Run is this server's user. */
  readonly runUids?: UidRange | undefined;
  /**
   * Where this server writes the token every call must carry (KRT_API_TOKEN_FILE), and the
   * group that may read it (KRT_API_TOKEN_GID, runtimed's); undefined: calls need no token.
   */
  readonly apiToken?: { readonly file: string; readonly gid: number | undefined } | undefined;
}

export interface RunningRuntimeServer {
  /** The bound port (0 for a unix socket). */
  readonly port: number;
  /** Stops accepting calls, ends every function and execution, closes the listener. */
  shutdown(): Promise<void>;
  /**
   * What a Pod told to stop asks (SIGTERM): keep serving while runtimed drains, until the
   * server holds no execution and no registration, then shut down. The kubelet's SIGKILL
   * at the end of the grace period is the backstop.
   */
  shutdownWhenIdle(): Promise<void>;
}

/** While waiting for the drain, how often the server looks whether it holds anything. */
const IDLE_POLL_MS = 100;
/** How often a waiting server logs what it still holds. */
const IDLE_LOG_MS = 10_000;

/** Starts a Runtime Server for one language on a loopback address or unix socket. */
export async function startRuntimeServer(options: RuntimeServerOptions): Promise<RunningRuntimeServer> {
  const listen = checkListenAddress(options.listen);
  const { adapter, logger } = options;
  const wall = await RunWall.start({ uids: options.runUids, logger, probe: adapter.probe });
  logger.info(
    options.runUids === undefined
      ? { walled: false }
      : { walled: true, runUids: `${String(options.runUids.first)}-${String(options.runUids.last)}` },
    options.runUids === undefined ? 'per-Run uids off: Runs on this server share its user' : 'each Run runs as a uid of its own',
  );
  const functions = new FunctionService({
    wall,
    adapter,
    logger,
    clock: systemClock,
    newId: () => `reg-${randomUUID()}`,
    tracer: options.tracer,
  });
  // Same loopback host as the gRPC listener (127.0.0.1 for a unix socket), an ephemeral port.
  const artifacts = await ArtifactEndpoint.start(artifactEndpointHost(listen), logger);
  const executions = new ExecutionService({ adapter, logger, clock: systemClock, artifacts, wall });
  const health = new HealthService([runtimeServerV1.RuntimeServerDefinition.fullName]);
  const token = options.apiToken === undefined ? undefined : await writeApiToken(options.apiToken.file, options.apiToken.gid);
  const checked = createServer().use(errorMiddleware(logger));
  const server = token === undefined ? checked : checked.use(apiTokenMiddleware(token));
  server.add(runtimeServerV1.RuntimeServerDefinition, runtimeServerService(functions, executions));
  server.add(healthV1.HealthDefinition, health.implementation());
  const port = await server.listen(listen);
  logger.info({ listen, port, language: adapter.language }, 'runtime server listening');
  let stopping: Promise<void> | undefined;
  const held = (): { registrations: number; executions: number } => ({
    registrations: functions.registrations,
    executions: executions.running,
  });
  const shutdown = (): Promise<void> => {
    stopping ??= (async () => {
      health.setNotServing();
      await Promise.all([functions.close(), executions.close()]);
      await server.shutdown();
      await artifacts.close();
      await wall.close();
      logger.info('runtime server stopped');
    })();
    return stopping;
  };
  return {
    port,
    async shutdownWhenIdle() {
      logger.info(held(), 'asked to stop: serving until runtimed has drained this Pod');
      let loggedAt = Date.now();
      while (stopping === undefined && held().registrations + held().executions > 0) {
        if (Date.now() - loggedAt >= IDLE_LOG_MS) {
          logger.info(held(), 'still holding work runtimed drains');
          loggedAt = Date.now();
        }
        await sleep(IDLE_POLL_MS);
      }
      await shutdown();
    },
    shutdown,
  };
}

/**
 * Entry point of a Runtime Server process: flags, environment, pino logger, signals.
 *   --listen ADDRESS   (env KRT_LISTEN; default 127.0.0.1:7450)
 *   --log-level LEVEL  (env KRT_LOG_LEVEL; default info)
 *   env KRT_API_TOKEN_FILE=PATH (and KRT_API_TOKEN_GID): every call but health must carry the
 *   token written there at start; unset: none needed.
 *   env KRT_RUN_UIDS=FIRST-LAST: each Run runs as a uid of its own from this range (the
 *   server must be uid 0 of the Pod's user namespace); unset: Runs share the server's user.
 * Signals: SIGTERM (the Pod is stopping) serves on until runtimed has drained the Pod (no
 * execution, no registration left); SIGINT stops at once. The kubelet's SIGKILL is the backstop.
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
      runUids: RunWall.uidsFromEnv(),
      apiToken: apiTokenFromEnv(),
    });
    if (tracing !== undefined) logger.info('tracing on: exporting spans over OTLP');
    void stopOnSignals(logger, async (signal) => {
      // SIGTERM: the Pod is stopping, and runtimed drains it (hands functions over, lets tasks
      // finish) first. SIGINT (a person's Ctrl-C, a test's stop): at once.
      await (signal === 'SIGTERM' ? server.shutdownWhenIdle() : server.shutdown());
      // After the last invocation ended: its spans are exported too.
      await tracing?.shutdown();
    }).then((code) => process.exit(code));
  } catch (error) {
    logger.fatal({ err: error }, 'runtime server failed to start');
    await tracing?.shutdown();
    process.exitCode = 1;
  }
}

function apiTokenFromEnv(env: NodeJS.ProcessEnv = process.env): RuntimeServerOptions['apiToken'] {
  const file = env.KRT_API_TOKEN_FILE ?? '';
  if (file === '') return undefined;
  const gid = env.KRT_API_TOKEN_GID ?? '';
  if (gid !== '' && !/^\d{1,10}$/.test(gid)) throw new Error(`KRT_API_TOKEN_GID must be a gid, not ${JSON.stringify(gid)}`);
  return { file, gid: gid === '' ? undefined : Number(gid) };
}
