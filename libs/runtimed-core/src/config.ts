import {
  BOUNDS,
  DEFAULTS,
  RUNTIMED_TLS_MOUNT_PATH,
  RUNTIME_CAPABILITIES,
  RUNTIME_LANGUAGES,
  isDns1123Label,
  isDns1123Subdomain,
  isUid,
} from '@kruntimes/api';
import type { RuntimeCapability, RuntimeLanguage } from '@kruntimes/api';
import { KruntimesError } from '@kruntimes/errors';
import { checkListenAddress } from '@kruntimes/runtime-server-core';

/**
 * Everything runtimed needs to know, read once at start from its environment (the Pod
 * template sets it; the identity comes from the downward API). Flags are not used: a
 * container's env is what the template builder, the chart and the local node all speak.
 *
 * | variable | meaning | default |
 * |---|---|---|
 * | `POD_NAME`, `POD_NAMESPACE`, `POD_UID`, `POD_IP` | downward API (`metadata.*`, `status.podIP`) | required |
 * | `RUNTIME_NAME` | the Runtime this Pod belongs to | required |
 * | `RUNTIME_LANGUAGE` | `python` or `bash` (the Runtime's `spec.language`) | required |
 * | `KRT_RUNTIME_CAPABILITIES` | the Runtime's `spec.capabilities`, comma-separated (`checkpoint-v1`: tasks may wait for input) | none |
 * | `KRT_RUNTIME_SERVER` | the local Runtime Server (`host:port` on loopback, or `unix:/path`) | `127.0.0.1:7450` |
 * | `KRT_API_TOKEN_FILE` | the token the Runtime Server wrote at its start, sent with every call to it | unset (no token) |
 * | `KRT_GRPC_PORT` | FunctionRuntime over TLS (server auth only; callers: runtime-gateway) on the Pod IP | `7443` |
 * | `KRT_PEER_PORT` | FunctionRuntime over mTLS for peer hops between this Runtime's runtimeds | `7444` |
 * | `KRT_HEALTH_PORT` | plaintext gRPC health only (the readinessProbe); refuses calls carrying a token | `7445` |
 * | `KRT_TLS_DIR` | the workload certificate (`ca.crt`, `tls.crt`, `tls.key`; a container path, re-read when the files change) | `/var/run/kruntimes/tls` |
 * | `KRT_METRICS_PORT` | Prometheus `/metrics` on the Pod IP; `0` turns it off | `9464` |
 * | `KRT_WORKSPACE_DIR` | an emptyDir mounted at the same path in runtimed and the Runtime Server | `/var/lib/kruntimes/workspaces` |
 * | `KRT_GATEWAY_HOST` | host (and optional port) of the runtime-gateway in endpoint URLs | `runtime-gateway.kruntimes-system.svc` |
 * | `KRT_GATEWAY_CA_FILE` | PEM file of the gateway's CA, published as `status.endpoint.caBundle` | unset: no caBundle |
 * | `KRT_LEASE_DURATION_SECONDS`, `KRT_LEASE_RENEW_SECONDS` | the Pod Lease | `90`, `20` |
 * | `KRT_ARTIFACT_GRANTS` | ArtifactGrants (plaintext gRPC for the local Runtime Server): loopback `host:port` (port 0: any free one) or `unix:/path` | `127.0.0.1:0` |
 * | `KRT_CANCEL_GRACE_SECONDS` | SIGTERM -> SIGKILL grace of a cancelled task | `10` |
 * | `KRT_DRAIN_SECONDS` | the Runtime's `spec.drainSeconds`: after SIGTERM, how long running tasks may finish before they are stopped (Interrupted, DrainWindowExceeded) | `300` |
 * | `KRT_RUNS_PER_POD` | this Pod's Run capacity (the Runtime's `spec.runs` when the Pod was made; the scheduler reads the same variable from the Pod spec): a claim beyond it is refused | unset: not checked |
 * | `KRT_AUTOMATIC_RETRY` | the cluster retry policy (the chart's `global.automaticRetry`, as stale-recovery's `--automatic-retry`): `false` keeps an execution this Pod lost (runtimed restarted, the Runtime Server died) from running again even when the task is retrySafe; the namespace annotation `kruntimes.io/automatic-retry` can only narrow it | `true` |
 * | `KRT_LOG_LEVEL` | pino level | `info` |
 * | `KRUNTIMES_CONTAINER_ROOT` | set only by the local node agent: container paths live under it | unset |
 */
export interface RuntimedConfig {
  pod: PodIdentity;
  runtime: string;
  language: RuntimeLanguage;
  /**
   * What the Runtime declares in spec.capabilities, from the Pod template (the same
   * template carries the image that has them: a Pod of an older template does not claim them).
   */
  capabilities: RuntimeCapability[];
  runtimeServerAddress: string;
  grpcPort: number;
  peerPort: number;
  healthPort: number;
  /** The workload certificate directory as the container sees it (a container path). */
  tlsDir: string;
  metricsPort: number;
  /** The workspace directory as both containers see it (a container path). */
  workspaceDir: string;
  gatewayHost: string;
  gatewayCaFile: string | undefined;
  leaseDurationSeconds: number;
  leaseRenewSeconds: number;
  cancelGraceSeconds: number;
  /** The drain window (`KRT_DRAIN_SECONDS`, the Runtime's spec.drainSeconds), counted from SIGTERM. */
  drainSeconds: number;
  /**
   * The Pod's Run capacity (`KRT_RUNS_PER_POD`, set by the Pod template from the Runtime's
   * `spec.runs`, and what the scheduler counts against for this Pod): runtimed refuses a
   * claim beyond it. Undefined only for a Pod made without it: then nothing is checked.
   */
  runsPerPod: number | undefined;
  /** The cluster retry policy (`KRT_AUTOMATIC_RETRY`): may an interrupted retrySafe task run again without the user? */
  automaticRetry: boolean;
  /** Where ArtifactGrants listens: loopback or a unix socket only (its bound address goes to the Runtime Server per execution). */
  artifactGrantsAddress: string;
  logLevel: string;
  /** Prefix of every container path on this host (the local node's container root), or ''. */
  containerRoot: string;
  /** Where the Runtime Server writes the token every call to it carries; undefined: none. */
  runtimeServerTokenFile: string | undefined;
}

export interface PodIdentity {
  name: string;
  namespace: string;
  uid: string;
  ip: string;
}

export const DEFAULT_WORKSPACE_DIR = '/var/lib/kruntimes/workspaces';
export const DEFAULT_GATEWAY_HOST = 'runtime-gateway.kruntimes-system.svc';
/** Any free loopback port: the bound address reaches the Runtime Server in each ExecuteRequest, so none is fixed. */
export const DEFAULT_ARTIFACT_GRANTS_ADDRESS = '127.0.0.1:0';

/** Reads and validates the configuration; every problem is reported at once. */
export function loadConfig(env: NodeJS.ProcessEnv): RuntimedConfig {
  const read = new EnvReader(env);
  const pod = podIdentity(read);
  const runtime = read.required('RUNTIME_NAME', isDns1123Label, 'a Runtime name');
  const language = read.required(
    'RUNTIME_LANGUAGE',
    (value) => (RUNTIME_LANGUAGES as readonly string[]).includes(value),
    `one of ${RUNTIME_LANGUAGES.join(', ')}`,
  );
  const workspaceDir = read.absolutePath('KRT_WORKSPACE_DIR', DEFAULT_WORKSPACE_DIR);
  const { leaseDurationSeconds, leaseRenewSeconds } = leaseTimes(read);
  const tlsDir = read.absolutePath('KRT_TLS_DIR', RUNTIMED_TLS_MOUNT_PATH);
  const { grpcPort, peerPort, healthPort, metricsPort } = listenPorts(read);
  const gatewayHost = read.optional('KRT_GATEWAY_HOST') ?? DEFAULT_GATEWAY_HOST;
  if (!/^[a-z0-9.-]+(?::\d{1,5})?$/.test(gatewayHost))
    read.problems.push(`KRT_GATEWAY_HOST=${JSON.stringify(gatewayHost)} is not host or host:port`);

  const config: RuntimedConfig = {
    pod,
    runtime,
    language: language as RuntimeLanguage,
    capabilities: capabilities(read),
    runtimeServerAddress: read.optional('KRT_RUNTIME_SERVER') ?? `127.0.0.1:${DEFAULTS.runtimeServerPort}`,
    runtimeServerTokenFile: read.optional('KRT_API_TOKEN_FILE') === undefined ? undefined : read.absolutePath('KRT_API_TOKEN_FILE', '/'),
    grpcPort,
    peerPort,
    healthPort,
    tlsDir,
    metricsPort,
    workspaceDir,
    gatewayHost,
    gatewayCaFile: read.optional('KRT_GATEWAY_CA_FILE'),
    leaseDurationSeconds,
    leaseRenewSeconds,
    cancelGraceSeconds: read.integer('KRT_CANCEL_GRACE_SECONDS', DEFAULTS.cancelGracePeriodSeconds, 0, 3600),
    drainSeconds: read.integer('KRT_DRAIN_SECONDS', DEFAULTS.drainSeconds, 0, BOUNDS.maxDrainSeconds),
    // The CRD's bounds of spec.runs.
    runsPerPod: read.optional('KRT_RUNS_PER_POD') === undefined ? undefined : read.integer('KRT_RUNS_PER_POD', 1, 1, 256),
    automaticRetry: read.boolean('KRT_AUTOMATIC_RETRY', true),
    artifactGrantsAddress: read.listenAddress('KRT_ARTIFACT_GRANTS', DEFAULT_ARTIFACT_GRANTS_ADDRESS),
    logLevel: read.optional('KRT_LOG_LEVEL') ?? 'info',
    containerRoot: read.optional('KRUNTIMES_CONTAINER_ROOT') ?? '',
  };
  if (read.problems.length > 0)
    throw new KruntimesError('InvalidRequest', `invalid runtimed configuration: ${read.problems.join('; ')}`, { terminal: true });
  return config;
}

/** Reads variables, collecting every problem instead of stopping at the first. */
class EnvReader {
  readonly problems: string[] = [];
  readonly #env: NodeJS.ProcessEnv;

  constructor(env: NodeJS.ProcessEnv) {
    this.#env = env;
  }

  required(name: string, valid: (value: string) => boolean, what: string): string {
    const value = this.#env[name];
    if (value === undefined || value === '') {
      this.problems.push(`${name} is required (${what})`);
      return '';
    }
    if (!valid(value)) this.problems.push(`${name}=${JSON.stringify(value)} is not ${what}`);
    return value;
  }

  /** Unset and empty both mean "not given". */
  optional(name: string): string | undefined {
    const value = this.#env[name];
    return value === undefined || value === '' ? undefined : value;
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || value < min || value > max) {
      this.problems.push(`${name}=${JSON.stringify(raw)} is not an integer in [${min}, ${max}]`);
      return fallback;
    }
    return value;
  }

  /** `true` or `false`, nothing else: a mistyped policy switch is a start failure, not a guess. */
  boolean(name: string, fallback: boolean): boolean {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    if (raw === 'true' || raw === 'false') return raw === 'true';
    this.problems.push(`${name}=${JSON.stringify(raw)} is not true or false`);
    return fallback;
  }

  /** A loopback `host:port` or `unix:/path`: the services only the Pod's own containers may reach. */
  listenAddress(name: string, fallback: string): string {
    const value = this.optional(name) ?? fallback;
    try {
      return checkListenAddress(value);
    } catch (error) {
      this.problems.push(`${name}: ${error instanceof Error ? error.message : String(error)}`);
      return fallback;
    }
  }

  absolutePath(name: string, fallback: string): string {
    const value = this.optional(name) ?? fallback;
    if (!value.startsWith('/')) this.problems.push(`${name}=${JSON.stringify(value)} is not an absolute path`);
    return value;
  }
}

/**
 * The declared capabilities this runtimed knows; others are ignored, not refused: a newer
 * controller-manager may declare one that this (older) runtimed image does not have,
 * which then simply is not offered.
 */
function capabilities(read: EnvReader): RuntimeCapability[] {
  const listed = (read.optional('KRT_RUNTIME_CAPABILITIES') ?? '').split(',').map((item) => item.trim());
  return RUNTIME_CAPABILITIES.filter((capability) => listed.includes(capability));
}

function podIdentity(read: EnvReader): PodIdentity {
  return {
    name: read.required('POD_NAME', isDns1123Subdomain, 'a Pod name (downward API metadata.name)'),
    namespace: read.required('POD_NAMESPACE', isDns1123Label, 'a namespace (downward API metadata.namespace)'),
    uid: read.required('POD_UID', isUid, 'a Pod UID (downward API metadata.uid)'),
    ip: read.required('POD_IP', (value) => value.length > 0, 'an IP address (downward API status.podIP)'),
  };
}

function leaseTimes(read: EnvReader): Pick<RuntimedConfig, 'leaseDurationSeconds' | 'leaseRenewSeconds'> {
  const leaseDurationSeconds = read.integer('KRT_LEASE_DURATION_SECONDS', DEFAULTS.leaseDurationSeconds, 2, 3600);
  const leaseRenewSeconds = read.integer('KRT_LEASE_RENEW_SECONDS', DEFAULTS.leaseRenewSeconds, 1, 3600);
  if (leaseRenewSeconds >= leaseDurationSeconds)
    read.problems.push('KRT_LEASE_RENEW_SECONDS must be shorter than KRT_LEASE_DURATION_SECONDS');
  return { leaseDurationSeconds, leaseRenewSeconds };
}

function listenPorts(read: EnvReader): Pick<RuntimedConfig, 'grpcPort' | 'peerPort' | 'healthPort' | 'metricsPort'> {
  const grpcPort = read.integer('KRT_GRPC_PORT', DEFAULTS.runtimedGrpcPort, 1, 65_535);
  const peerPort = read.integer('KRT_PEER_PORT', DEFAULTS.runtimedPeerPort, 1, 65_535);
  const healthPort = read.integer('KRT_HEALTH_PORT', DEFAULTS.runtimedHealthPort, 1, 65_535);
  const metricsPort = read.integer('KRT_METRICS_PORT', DEFAULTS.runtimedMetricsPort, 0, 65_535);
  // All of them listen on the Pod IP: two on one port would fail at bind time, less clearly.
  const ports = [
    ['KRT_GRPC_PORT', grpcPort],
    ['KRT_PEER_PORT', peerPort],
    ['KRT_HEALTH_PORT', healthPort],
    ['KRT_METRICS_PORT', metricsPort],
  ] as const;
  for (const [index, [name, port]] of ports.entries()) {
    const clash = ports.slice(0, index).find(([, other]) => other === port && port !== 0);
    if (clash !== undefined) read.problems.push(`${name} and ${clash[0]} are both ${port}`);
  }
  return { grpcPort, peerPort, healthPort, metricsPort };
}
