// runtime-gateway: wiring only (logic in @kruntimes/gateway-core).
//   --listen HOST:PORT             HTTPS listener (default 0.0.0.0:8443); there is no plaintext one
//   --tls-cert-file PATH           serving certificate (PEM), reloaded when it changes
//   --tls-key-file PATH            its key (PEM)
//   --runtimed-ca-file PATH        the internal CA that issued runtimed's certificates (ca.crt)
//   --resolve MODE                 endpointslices: every ready runtimed, from a watch of the Runtime
//                                  Services' EndpointSlices (a cluster; the chart's default);
//                                  dns: <runtime>.<ns>.svc, one connection (a cluster, no API access);
//                                  endpoints: a watch of Services and Pods (the local cluster,
//                                  whose Pods are on loopback, which EndpointSlices refuse)
//   --namespace NS                 endpointslices/endpoints mode: watch one namespace (default: all)
//   --kubeconfig PATH              endpointslices/endpoints mode; default: KUBECONFIG, then in-cluster
//   --metrics-address HOST:PORT    Prometheus /metrics, plaintext (default: off)
//   --shutdown-delay-seconds N     after SIGTERM, how long it still accepts and serves new connections
//                                  while GET /readyz says 503, so that the Service's endpoints drop it
//                                  before its listener closes (default 5); SIGINT stops at once
//   --drain-seconds N              bound on finishing in-flight requests once the listener closed (default 30)
//   --log-level LEVEL              default info (env KRT_LOG_LEVEL)
// Tracing: spans exported over OTLP (HTTP/protobuf) when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; off (no SDK at all) otherwise.
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import {
  DnsResolver,
  EndpointSliceResolver,
  EndpointsResolver,
  Gateway,
  decideShutdownDelayMs,
  startMetricsServer,
} from '@kruntimes/gateway-core';
import type { MetricsServer, UpstreamResolver } from '@kruntimes/gateway-core';
import { exitAfterFlush, stopOnSignals } from '@kruntimes/host';
import { startTracing } from '@kruntimes/tracing';
import { pino } from 'pino';

/** The flags, or a usage error on stderr and exit 2 (no stack trace: the user mistyped a flag). */
function parseFlags() {
  try {
    return parseArgs({
      options: {
        listen: { type: 'string', default: '0.0.0.0:8443' },
        'tls-cert-file': { type: 'string' },
        'tls-key-file': { type: 'string' },
        'runtimed-ca-file': { type: 'string' },
        resolve: { type: 'string', default: 'dns' },
        namespace: { type: 'string' },
        kubeconfig: { type: 'string' },
        'metrics-address': { type: 'string' },
        'shutdown-delay-seconds': { type: 'string', default: '5' },
        'drain-seconds': { type: 'string', default: '30' },
        'log-level': { type: 'string' },
      },
      strict: true,
    });
  } catch (error) {
    process.stderr.write(`runtime-gateway: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  }
}

const { values } = parseFlags();

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
    level: values['log-level'] ?? process.env.KRT_LOG_LEVEL ?? 'info',
    // The gateway never logs headers; this is the belt to that rule's braces.
    redact: ['authorization', '*.authorization', 'headers', '*.headers', 'token', '*.token'],
  },
  logDestination,
);

function hostPort(flag: string, value: string): { host: string; port: number } {
  const colon = value.lastIndexOf(':');
  const port = Number(value.slice(colon + 1));
  if (colon < 0 || !Number.isInteger(port) || port < 0 || port > 65_535)
    throw new Error(`--${flag} must be HOST:PORT, not ${JSON.stringify(value)}`);
  return { host: value.slice(0, colon).replace(/^\[(.*)\]$/, '$1') || '0.0.0.0', port };
}

function required(flag: 'tls-cert-file' | 'tls-key-file' | 'runtimed-ca-file'): string {
  const value = values[flag];
  if (value === undefined || value === '') throw new Error(`--${flag} is required`);
  return value;
}

let metrics: MetricsServer | undefined;
let resolver: UpstreamResolver | undefined;
const tracing = await startTracing('kruntimes-runtime-gateway');
try {
  const listen = hostPort('listen', values.listen);
  const drainSeconds = Number(values['drain-seconds']);
  if (!(drainSeconds >= 0)) throw new Error('--drain-seconds must be a number of seconds');
  const shutdownDelaySeconds = Number(values['shutdown-delay-seconds']);
  if (!(shutdownDelaySeconds >= 0)) throw new Error('--shutdown-delay-seconds must be a number of seconds');
  switch (values.resolve) {
    case 'dns':
      resolver = new DnsResolver();
      break;
    case 'endpointslices':
    case 'endpoints': {
      const kubeConfig = new KubeConfig();
      if (values.kubeconfig === undefined) kubeConfig.loadFromDefault();
      else kubeConfig.loadFromFile(values.kubeconfig);
      const watchOptions = { kubeConfig, logger, ...(values.namespace === undefined ? {} : { namespace: values.namespace }) };
      const watching = values.resolve === 'endpoints' ? new EndpointsResolver(watchOptions) : new EndpointSliceResolver(watchOptions);
      resolver = watching;
      await watching.start();
      break;
    }
    default:
      throw new Error(`--resolve must be endpointslices, dns or endpoints, not ${JSON.stringify(values.resolve)}`);
  }
  if (values['metrics-address'] !== undefined) {
    const address = hostPort('metrics-address', values['metrics-address']);
    metrics = await startMetricsServer(address.host, address.port);
    logger.info({ address: metrics.address }, 'metrics listening (plaintext, no credentials accepted)');
  }
  const gateway = await Gateway.start({
    ...listen,
    tlsCertFile: required('tls-cert-file'),
    tlsKeyFile: required('tls-key-file'),
    runtimedCaFile: required('runtimed-ca-file'),
    resolver,
    logger,
    ...(metrics === undefined ? {} : { metrics: metrics.metrics }),
    ...(tracing === undefined ? {} : { tracer: tracing.tracer }),
  });
  if (tracing !== undefined) logger.info('tracing on: exporting spans over OTLP');
  void stopOnSignals(logger, async (signal) => {
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
