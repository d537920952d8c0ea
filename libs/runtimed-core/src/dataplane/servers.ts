import { ERROR_CODES, KruntimesError } from '@kruntimes/errors';
import { METADATA_KEYS, healthV1, runtimedV1 } from '@kruntimes/proto';
import { ServerError, Status, createServer } from 'nice-grpc';
import type { CallContext, Server } from 'nice-grpc';
import type { Logger } from 'pino';
import { functionRuntimeService } from './function-runtime.ts';
import type { FunctionRuntimeOptions } from './function-runtime.ts';
import { peerIdentityInterceptor } from './peer-identity.ts';
import type { TlsMaterial } from './tls-material.ts';

const { HealthCheckResponse_ServingStatus: ServingStatus } = healthV1;

export interface DataplaneServersOptions {
  /** The Pod IP every port listens on. */
  host: string;
  grpcPort: number;
  peerPort: number;
  healthPort: number;
  tls: TlsMaterial;
  /** This runtimed's own workload identity: the only one the peer port accepts. */
  identity: string;
  serving(): boolean;
  functionRuntime: FunctionRuntimeOptions;
  logger: Logger;
}

export interface DataplaneServers {
  grpcPort: number;
  peerPort: number;
  healthPort: number;
  stop(): Promise<void>;
}

/**
 * runtimed's three listeners on the Pod IP:
 * - health (plaintext): gRPC health only, for the kubelet's probe, which cannot do TLS;
 *   any call carrying a credential is refused, so none is ever sent in the clear here;
 * - grpc (TLS, server authentication): FunctionRuntime for the gateway, direct requests only;
 * - peer (mTLS, client certificate of this Runtime's own identity): FunctionRuntime for
 *   peer hops only.
 * The TLS ports follow the certificate files (new connections use a new certificate).
 */
export async function startDataplaneServers(options: DataplaneServersOptions): Promise<DataplaneServers> {
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const started: Server[] = [];
  try {
    const health = createServer();
    health.add(
      healthV1.HealthDefinition,
      healthService(() => options.serving()),
    );
    started.push(health);
    const healthPort = await health.listen(`${host}:${options.healthPort}`);

    const grpc = createServer(SERVER_OPTIONS);
    grpc.add(runtimedV1.FunctionRuntimeDefinition, functionRuntimeService(options.functionRuntime, 'grpc'));
    started.push(grpc);
    const grpcPort = await grpc.listen(`${host}:${options.grpcPort}`, options.tls.serverCredentials(false));

    const peer = createServer(SERVER_OPTIONS);
    peer.add(runtimedV1.FunctionRuntimeDefinition, functionRuntimeService(options.functionRuntime, 'peer'));
    started.push(peer);
    const refused = (from: string, identity: string | undefined): void => {
      options.logger.warn({ peer: from, identity: identity ?? null }, "refused a peer call: not this Runtime's workload identity");
    };
    const peerPort = await peer.listen(
      `${host}:${options.peerPort}`,
      options.tls.serverCredentials(true, [peerIdentityInterceptor(options.identity, refused)]),
    );

    return {
      grpcPort,
      peerPort,
      healthPort,
      async stop() {
        await Promise.all(started.map((server) => server.shutdown()));
      },
    };
  } catch (error) {
    for (const server of started) server.forceShutdown();
    throw error;
  }
}

/** A 1 MiB payload plus the request's other fields and protobuf framing. */
const MAX_MESSAGE_BYTES = 2 * 1024 * 1024;
/** Channelz (grpc-js's per-call introspection counters, which nothing here reads) off: work on every call for nothing. */
const SERVER_OPTIONS = { 'grpc.max_receive_message_length': MAX_MESSAGE_BYTES, 'grpc.enable_channelz': 0 };

function healthService(serving: () => boolean): healthV1.HealthServiceImplementation {
  const refuseCredentials = (context: CallContext): void => {
    if (context.metadata.has(METADATA_KEYS.authorization)) {
      const error = new KruntimesError('InvalidRequest', 'the health port is plaintext and takes no credentials');
      context.trailer.set(METADATA_KEYS.errorCode, error.code);
      context.trailer.set(METADATA_KEYS.errorSource, error.source);
      throw new ServerError(Status[ERROR_CODES[error.code].grpc], error.message);
    }
  };
  const status = (): healthV1.HealthCheckResponse_ServingStatus => (serving() ? ServingStatus.SERVING : ServingStatus.NOT_SERVING);
  return {
    // eslint-disable-next-line @typescript-eslint/require-await -- the generated interface is async
    check: async (request, context) => {
      refuseCredentials(context);
      if (request.service !== '') throw new ServerError(Status.NOT_FOUND, `unknown service ${request.service}`);
      return { status: status() };
    },
    // Watch is answered once; kubelet and grpc_health_probe use Check.
    watch: async function* (request, context) {
      refuseCredentials(context);
      yield { status: request.service === '' ? status() : ServingStatus.SERVICE_UNKNOWN };
      await Promise.resolve();
    },
  };
}
