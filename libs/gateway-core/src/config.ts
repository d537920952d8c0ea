import { parseArgs } from 'node:util';
import { parseListenAddress } from '@kruntimes/controller-runtime';
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { DnsResolver, EndpointSliceResolver, EndpointsResolver } from './resolver.ts';
import type { UpstreamResolver } from './resolver.ts';

/**
 * The gateway's flags (each a string; the defaults are applied here):
 *
 * | flag | meaning | default |
 * |---|---|---|
 * | `--listen HOST:PORT` | the HTTPS listener; there is no plaintext one | 0.0.0.0:8443 |
 * | `--tls-cert-file PATH`, `--tls-key-file PATH` | serving certificate and key (PEM), reloaded when they change | required |
 * | `--runtimed-ca-file PATH` | the internal CA that issued runtimed's certificates (ca.crt) | required |
 * | `--resolve MODE` | `endpointslices`: every ready runtimed, from a watch of the Runtime Services' EndpointSlices (a cluster; the chart's default); `dns`: `<runtime>.<ns>.svc`, one connection (a cluster, no API access); `endpoints`: a watch of Services and Pods (the local cluster, whose Pods are on loopback, which EndpointSlices refuse) | dns |
 * | `--namespace NS` | endpointslices/endpoints mode: watch one namespace | all |
 * | `--kubeconfig PATH` | endpointslices/endpoints mode | KUBECONFIG, then in-cluster |
 * | `--metrics-address HOST:PORT` | Prometheus /metrics, plaintext | off |
 * | `--shutdown-delay-seconds N` | after SIGTERM, how long it still accepts and serves new connections while GET /readyz says 503, so that the Service's endpoints drop it before its listener closes; SIGINT stops at once | 5 |
 * | `--drain-seconds N` | bound on finishing in-flight requests once the listener closed | 30 |
 * | `--log-level LEVEL` | | info (env KRT_LOG_LEVEL) |
 */
const GATEWAY_OPTIONS = {
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
} as const;

export type GatewayFlags = ReturnType<typeof parseArgs<{ options: typeof GATEWAY_OPTIONS; strict: true }>>['values'];

/** A command line the parser refuses (an unknown flag, a flag without its value): the user's typing, not a failure to start. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The command line's flags; UsageError when it has an unknown flag, a positional or a flag without its value. */
export function parseGatewayFlags(argv: readonly string[]): GatewayFlags {
  try {
    return parseArgs({ args: [...argv], options: GATEWAY_OPTIONS, strict: true }).values;
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error), { cause: error });
  }
}

export type ResolveMode = 'dns' | 'endpointslices' | 'endpoints';

export interface ListenAddress {
  host: string;
  port: number;
}

/** Everything the gateway process runs with, checked before anything starts. */
export interface GatewayConfig {
  listen: ListenAddress;
  tlsCertFile: string;
  tlsKeyFile: string;
  runtimedCaFile: string;
  resolve: ResolveMode;
  /** The namespace the endpointslices/endpoints watches are limited to; undefined: all. */
  namespace: string | undefined;
  /** Undefined: KUBECONFIG, then in-cluster. */
  kubeconfig: string | undefined;
  metricsAddress: ListenAddress | undefined;
  shutdownDelaySeconds: number;
  drainSeconds: number;
}

/** The flags checked, in the order a user reads them in an error (the listener first, the certificate files last). */
export function gatewayConfig(flags: GatewayFlags): GatewayConfig {
  const listen = listenAddress('listen', flags.listen);
  const drainSeconds = seconds('drain-seconds', flags['drain-seconds']);
  const shutdownDelaySeconds = seconds('shutdown-delay-seconds', flags['shutdown-delay-seconds']);
  const resolve = flags.resolve;
  if (resolve !== 'dns' && resolve !== 'endpointslices' && resolve !== 'endpoints')
    throw new Error(`--resolve must be endpointslices, dns or endpoints, not ${JSON.stringify(resolve)}`);
  const metricsAddress = flags['metrics-address'] === undefined ? undefined : listenAddress('metrics-address', flags['metrics-address']);
  return {
    listen,
    tlsCertFile: required(flags, 'tls-cert-file'),
    tlsKeyFile: required(flags, 'tls-key-file'),
    runtimedCaFile: required(flags, 'runtimed-ca-file'),
    resolve,
    namespace: flags.namespace,
    kubeconfig: flags.kubeconfig,
    metricsAddress,
    shutdownDelaySeconds,
    drainSeconds,
  };
}

/** HOST:PORT; an empty host is every interface. */
function listenAddress(flag: string, value: string): ListenAddress {
  const { host, port } = parseListenAddress(value, flag);
  return { host: host ?? '0.0.0.0', port };
}

function seconds(flag: string, value: string): number {
  const parsed = Number(value);
  if (!(parsed >= 0)) throw new Error(`--${flag} must be a number of seconds`);
  return parsed;
}

function required(flags: GatewayFlags, flag: 'tls-cert-file' | 'tls-key-file' | 'runtimed-ca-file'): string {
  const value = flags[flag];
  if (value === undefined || value === '') throw new Error(`--${flag} is required`);
  return value;
}

/**
 * The upstream resolver of the configured mode, started (its watches synced). One that fails
 * to start is stopped first: nothing it opened keeps the process alive.
 */
export async function startUpstreamResolver(config: GatewayConfig, logger: Logger): Promise<UpstreamResolver> {
  if (config.resolve === 'dns') return new DnsResolver();
  const kubeConfig = new KubeConfig();
  if (config.kubeconfig === undefined) kubeConfig.loadFromDefault();
  else kubeConfig.loadFromFile(config.kubeconfig);
  const watchOptions = { kubeConfig, logger, ...(config.namespace === undefined ? {} : { namespace: config.namespace }) };
  const watching = config.resolve === 'endpoints' ? new EndpointsResolver(watchOptions) : new EndpointSliceResolver(watchOptions);
  try {
    await watching.start();
  } catch (error) {
    await watching.stop();
    throw error;
  }
  return watching;
}
