import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ResourceRequirements } from '@kruntimes/api';
import { parseServiceFlags, serviceConfig } from '@kruntimes/controller-runtime';
import type { ServiceConfig, ServiceFlagValues } from '@kruntimes/controller-runtime';
import { memoryQuantityBytes } from '@kruntimes/runtime-workload';
import type { WorkloadConfig } from '@kruntimes/runtime-workload';
import { validateCertificateAuthority } from '@kruntimes/workload-pki';
import type { CertificateAuthority } from '@kruntimes/workload-pki';
import { validateGatewayCaPem, validateGatewayHost } from './gateway-endpoint.ts';
import { DEFAULT_FINISHED_RUNS_PER_RUNTIME } from './run-collector.ts';

/**
 * The controller-manager's own flags (each a string; the defaults are applied here), beside
 * controller-runtime's SERVICE_OPTIONS (kubeconfig, namespace, the Lease, metrics and health
 * addresses, log level; its Lease: kruntimes-controller-manager; the Lease's durations each a
 * number >= 1):
 *
 * | flag | meaning | default |
 * |---|---|---|
 * | `--runtimed-image IMAGE` | | kruntimes/runtimed:latest |
 * | `--python-image IMAGE`, `--bash-image IMAGE` | Runtime Server images per language | kruntimes/runtime-server-*:latest |
 * | `--runtime-service-account NAME` | service account of Runtime Pods | kruntimes-runtimed |
 * | `--runtime-server-listen loopback\|podIP` | podIP only on the local node | loopback |
 * | `--finished-runs-per-runtime N` | completed-Run GC keeps this many | 100 |
 * | `--internal-ca-dir DIR` | ca.crt + ca.key of the internal CA (the mounted Secret kruntimes-internal-ca); signs each Runtime's runtimed TLS Secret | required |
 * | `--gateway-host HOST[:PORT]` | the runtime-gateway function Runs' status.endpoint points at (Runtime Pods' KRT_GATEWAY_HOST) | runtimed's own |
 * | `--gateway-ca-file FILE` | PEM certificate(s) of the gateway's CA, read at start; copied as gateway-ca.crt into each runtimed TLS Secret, published as caBundle | none |
 * | `--runtime-otlp-endpoint URL` | OTLP endpoint (HTTP/protobuf) of Runtime Pods' spans: their OTEL_EXPORTER_OTLP_ENDPOINT | none, tracing off there |
 * | `--runtimed-cpu-request Q`, `--runtimed-memory-request Q`, `--runtimed-memory-limit Q` | resources of every Runtime Pod's runtimed container; its V8 heap flags (NODE_OPTIONS) follow the memory limit | none |
 * | `--user-namespaces true\|false` | Runtime Pods in user namespaces of their own, each Run its own user (runtime-workload's RunIsolation perRunUser); false for nodes without them (sharedUser: Runs on one Pod trust each other) | true |
 * | `--automatic-retry true\|false` | the cluster retry policy, as stale-recovery's flag: false puts KRT_AUTOMATIC_RETRY=false on runtimed, which then does not run an execution its Pod lost again | true (env KRT_AUTOMATIC_RETRY) |
 */
const CONTROLLER_MANAGER_OPTIONS = {
  'runtimed-image': { type: 'string' },
  'python-image': { type: 'string' },
  'bash-image': { type: 'string' },
  'runtime-service-account': { type: 'string' },
  'runtime-server-listen': { type: 'string' },
  'user-namespaces': { type: 'string' },
  'finished-runs-per-runtime': { type: 'string' },
  'internal-ca-dir': { type: 'string' },
  'gateway-host': { type: 'string' },
  'gateway-ca-file': { type: 'string' },
  'runtime-otlp-endpoint': { type: 'string' },
  'runtimed-cpu-request': { type: 'string' },
  'runtimed-memory-request': { type: 'string' },
  'runtimed-memory-limit': { type: 'string' },
  'automatic-retry': { type: 'string' },
} as const;

/** The flags as given, without defaults: unset ones are undefined. */
export type ControllerManagerFlags = ServiceFlagValues & Partial<Record<keyof typeof CONTROLLER_MANAGER_OPTIONS, string | undefined>>;

/** The command line's flags; throws parseArgs's error on an unknown flag, a positional or a flag without its value. */
export function parseControllerManagerFlags(argv: readonly string[]): ControllerManagerFlags {
  return parseServiceFlags(argv, CONTROLLER_MANAGER_OPTIONS);
}

/** Everything the controller-manager process runs with, checked and read before it campaigns. */
export interface ControllerManagerConfig extends ServiceConfig {
  workload: WorkloadConfig;
  finishedRunsPerRuntime: number;
  internalCa: CertificateAuthority;
}

/**
 * Checks the flags and reads the files they name, so that a configuration error stops the
 * start with its reason at once, not on taking the lease. Read once: rotating the internal
 * or the gateway CA means restarting the controller-manager (Runtime certificates and
 * Secrets then get reissued).
 */
export async function controllerManagerConfig(flags: ControllerManagerFlags, env: NodeJS.ProcessEnv): Promise<ControllerManagerConfig> {
  const listen = flags['runtime-server-listen'] ?? 'loopback';
  const resources = runtimedResources(flags);
  const internalCa = await readInternalCa(flags['internal-ca-dir']);
  const gateway = await gatewayEndpoint(flags['gateway-host'], flags['gateway-ca-file']);
  const otlpEndpoint = flags['runtime-otlp-endpoint'] === '' ? undefined : flags['runtime-otlp-endpoint'];
  if (otlpEndpoint !== undefined && !/^https?:\/\/./.test(otlpEndpoint))
    throw new Error(`--runtime-otlp-endpoint must be an http:// or https:// URL, not ${JSON.stringify(otlpEndpoint)}`);
  const automaticRetry = flags['automatic-retry'] ?? env.KRT_AUTOMATIC_RETRY ?? 'true';
  if (automaticRetry !== 'true' && automaticRetry !== 'false')
    throw new Error(`--automatic-retry must be true or false, not ${JSON.stringify(automaticRetry)}`);
  const userNamespaces = flags['user-namespaces'] ?? 'true';
  if (userNamespaces !== 'true' && userNamespaces !== 'false')
    throw new Error(`--user-namespaces must be true or false, not ${JSON.stringify(userNamespaces)}`);
  if (listen !== 'loopback' && listen !== 'podIP')
    throw new Error(`--runtime-server-listen must be loopback or podIP, not ${JSON.stringify(listen)}`);
  return {
    ...serviceConfig(flags, env, { leaseName: 'kruntimes-controller-manager', seconds: (flag, value) => number(flag, value, 1) }),
    workload: {
      runtimedImage: flags['runtimed-image'] ?? 'kruntimes/runtimed:latest',
      runtimeServerImages: {
        python: flags['python-image'] ?? 'kruntimes/runtime-server-python:latest',
        bash: flags['bash-image'] ?? 'kruntimes/runtime-server-bash:latest',
      },
      serviceAccountName: flags['runtime-service-account'] ?? 'kruntimes-runtimed',
      runtimeServerListen: listen,
      runIsolation: userNamespaces === 'true' ? 'perRunUser' : 'sharedUser',
      ...(gateway === undefined ? {} : { gateway }),
      ...(otlpEndpoint === undefined ? {} : { otlpEndpoint }),
      ...(resources === undefined ? {} : { runtimedResources: resources }),
      automaticRetry: automaticRetry === 'true',
    },
    finishedRunsPerRuntime: number(
      'finished-runs-per-runtime',
      flags['finished-runs-per-runtime'] ?? String(DEFAULT_FINISHED_RUNS_PER_RUNTIME),
      0,
    ),
    internalCa,
  };
}

function number(flag: string, value: string, minimum: number): number {
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < minimum)
    throw new Error(`--${flag} must be a number >= ${minimum}, not ${JSON.stringify(value)}`);
  return parsed;
}

/** ca.crt and ca.key of --internal-ca-dir; a missing flag or file stops the start with the reason. */
async function readInternalCa(dir: string | undefined): Promise<CertificateAuthority> {
  if (dir === undefined) throw new Error('--internal-ca-dir is required: the directory with ca.crt and ca.key of the internal CA');
  const [certPem, keyPem] = await Promise.all([readFile(join(dir, 'ca.crt'), 'utf8'), readFile(join(dir, 'ca.key'), 'utf8')]);
  validateCertificateAuthority({ certPem, keyPem });
  return { certPem, keyPem };
}

/** --gateway-host and --gateway-ca-file, checked like the CA. */
async function gatewayEndpoint(host: string | undefined, caFile: string | undefined): Promise<WorkloadConfig['gateway']> {
  if (host === undefined) {
    if (caFile !== undefined) throw new Error('--gateway-ca-file needs --gateway-host: the CA is of the gateway that host names');
    return undefined;
  }
  validateGatewayHost(host);
  if (caFile === undefined) return { host };
  const caPem = await readFile(caFile, 'utf8').catch((error: unknown) => {
    throw new Error(`--gateway-ca-file ${caFile} cannot be read`, { cause: error });
  });
  return { host, caPem: validateGatewayCaPem(caPem, `--gateway-ca-file ${caFile}`) };
}

/** runtimed's container resources from the --runtimed-* flags, each checked; undefined when none is set. */
function runtimedResources(flags: ControllerManagerFlags): ResourceRequirements | undefined {
  const quantity = (flag: string, value: string | undefined, valid: (text: string) => boolean): string | undefined => {
    if (value === undefined || value === '') return undefined;
    if (!valid(value))
      throw new Error(`--${flag} must be a quantity such as ${flag.includes('cpu') ? '50m' : '96Mi'}, not ${JSON.stringify(value)}`);
    return value;
  };
  const memory = (text: string): boolean => memoryQuantityBytes(text) !== undefined;
  const cpu = (text: string): boolean => /^(\d+m|\d+(\.\d+)?)$/.test(text);
  const cpuRequest = quantity('runtimed-cpu-request', flags['runtimed-cpu-request'], cpu);
  const memoryRequest = quantity('runtimed-memory-request', flags['runtimed-memory-request'], memory);
  const memoryLimit = quantity('runtimed-memory-limit', flags['runtimed-memory-limit'], memory);
  const requests = {
    ...(cpuRequest === undefined ? {} : { cpu: cpuRequest }),
    ...(memoryRequest === undefined ? {} : { memory: memoryRequest }),
  };
  const limits = memoryLimit === undefined ? {} : { memory: memoryLimit };
  if (Object.keys(requests).length === 0 && Object.keys(limits).length === 0) return undefined;
  return { ...(Object.keys(requests).length === 0 ? {} : { requests }), ...(Object.keys(limits).length === 0 ? {} : { limits }) };
}
