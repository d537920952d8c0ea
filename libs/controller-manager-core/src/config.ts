import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ResourceRequirements } from '@kruntimes/api';
import { leaseFromFlags } from '@kruntimes/controller-runtime';
import type { ManagerLeaderElection } from '@kruntimes/controller-runtime';
import { memoryQuantityBytes } from '@kruntimes/runtime-workload';
import type { WorkloadConfig } from '@kruntimes/runtime-workload';
import { validateCertificateAuthority } from '@kruntimes/workload-pki';
import type { CertificateAuthority } from '@kruntimes/workload-pki';
import { validateGatewayCaPem, validateGatewayHost } from './gateway-endpoint.ts';
import { DEFAULT_FINISHED_RUNS_PER_RUNTIME } from './run-collector.ts';

/**
 * The controller-manager's flags (each a string; the defaults are applied here):
 *
 * | flag | meaning | default |
 * |---|---|---|
 * | `--kubeconfig PATH` | | KUBECONFIG, then in-cluster |
 * | `--namespace NS` | watch one namespace | all |
 * | `--lease-namespace NS` | where the leader Lease lives | POD_NAMESPACE, else kruntimes-system |
 * | `--lease-name NAME` | | kruntimes-controller-manager |
 * | `--lease-duration-seconds N`, `--renew-deadline-seconds N`, `--retry-period-seconds N` | | 15, 10, 2 |
 * | `--runtimed-image IMAGE` | | kruntimes/runtimed:latest |
 * | `--python-image IMAGE`, `--bash-image IMAGE` | Runtime Server images per language | kruntimes/runtime-server-*:latest |
 * | `--runtime-service-account NAME` | service account of Runtime Pods | kruntimes-runtimed |
 * | `--runtime-server-listen loopback\|podIP` | podIP only on the local node | loopback |
 * | `--finished-runs-per-runtime N` | completed-Run GC keeps this many | 100 |
 * | `--internal-ca-dir DIR` | ca.crt + ca.key of the internal CA (the mounted Secret kruntimes-internal-ca); signs each Runtime's runtimed TLS Secret | required |
 * | `--log-level LEVEL` | | info (env KRT_LOG_LEVEL) |
 * | `--metrics-address HOST:PORT` | Prometheus /metrics (plaintext) | off |
 * | `--health-address HOST:PORT` | the kubelet's probes: /healthz, /readyz (plaintext) | off |
 * | `--gateway-host HOST[:PORT]` | the runtime-gateway function Runs' status.endpoint points at (Runtime Pods' KRT_GATEWAY_HOST) | runtimed's own |
 * | `--gateway-ca-file FILE` | PEM certificate(s) of the gateway's CA, read at start; copied as gateway-ca.crt into each runtimed TLS Secret, published as caBundle | none |
 * | `--runtime-otlp-endpoint URL` | OTLP endpoint (HTTP/protobuf) of Runtime Pods' spans: their OTEL_EXPORTER_OTLP_ENDPOINT | none, tracing off there |
 * | `--runtimed-cpu-request Q`, `--runtimed-memory-request Q`, `--runtimed-memory-limit Q` | resources of every Runtime Pod's runtimed container; its V8 heap flags (NODE_OPTIONS) follow the memory limit | none |
 * | `--user-namespaces true\|false` | Runtime Pods in user namespaces of their own, each Run its own user (runtime-workload's RunIsolation perRunUser); false for nodes without them (sharedUser: Runs on one Pod trust each other) | true |
 * | `--automatic-retry true\|false` | the cluster retry policy, as stale-recovery's flag: false puts KRT_AUTOMATIC_RETRY=false on runtimed, which then does not run an execution its Pod lost again | true (env KRT_AUTOMATIC_RETRY) |
 */
export type ControllerManagerFlag =
  | 'kubeconfig'
  | 'namespace'
  | 'lease-namespace'
  | 'lease-name'
  | 'lease-duration-seconds'
  | 'renew-deadline-seconds'
  | 'retry-period-seconds'
  | 'runtimed-image'
  | 'python-image'
  | 'bash-image'
  | 'runtime-service-account'
  | 'runtime-server-listen'
  | 'finished-runs-per-runtime'
  | 'internal-ca-dir'
  | 'log-level'
  | 'metrics-address'
  | 'health-address'
  | 'gateway-host'
  | 'gateway-ca-file'
  | 'runtime-otlp-endpoint'
  | 'runtimed-cpu-request'
  | 'runtimed-memory-request'
  | 'runtimed-memory-limit'
  | 'automatic-retry'
  | 'user-namespaces';

/** The flags as given (main.ts declares them to parseArgs, without defaults): unset ones are undefined. */
export type ControllerManagerFlags = Partial<Record<ControllerManagerFlag, string | undefined>>;

/** Everything the controller-manager process runs with, checked and read before it campaigns. */
export interface ControllerManagerConfig {
  /** Undefined: KUBECONFIG, then in-cluster. */
  kubeconfig: string | undefined;
  namespace: string | undefined;
  leaderElection: Omit<ManagerLeaderElection, 'elector'>;
  metricsAddress: string | undefined;
  healthAddress: string | undefined;
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
    kubeconfig: flags.kubeconfig,
    namespace: flags.namespace,
    leaderElection: leaseFromFlags(flags, env, {
      leaseName: 'kruntimes-controller-manager',
      seconds: (flag, value) => number(flag, value, 1),
    }),
    metricsAddress: flags['metrics-address'],
    healthAddress: flags['health-address'],
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
