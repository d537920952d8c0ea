import { createHash } from 'node:crypto';
import { API_GROUP_VERSION, DEFAULTS, LABELS, PART_OF, RUNTIME_KIND, RUNTIMED_TLS_MOUNT_PATH, runtimedTlsSecretName } from '@kruntimes/api';
import type { OwnerReference, ResourceRequirements, Runtime, RuntimeLanguage } from '@kruntimes/api';
import type {
  Container,
  ContainerEnvVar,
  Deployment,
  PodDisruptionBudget,
  PodSecurityContext,
  PodTemplate,
  Secret,
  Service,
  Volume,
} from './kube-types.ts';
import { memoryQuantityBytes, nodeHeapOptions } from './node-heap.ts';

/** Container names inside a Runtime Pod; runtimed and tests look containers up by them. */
export const CONTAINERS = { runtimed: 'runtimed', runtimeServer: 'runtime-server' } as const;

/** `app.kubernetes.io/component` of Runtime Pods, their Deployment and Service. */
export const RUNTIME_COMPONENT = 'runtime';
/** `app.kubernetes.io/managed-by` of the objects the controller-manager creates. */
export const MANAGED_BY = 'kruntimes-controller-manager';
/** Hash of the desired Deployment/Service spec: the controller updates only when it changes. */
export const SPEC_HASH_ANNOTATION = 'kruntimes.io/spec-hash';

/** Where the Pod-shared workspace volume is mounted in both containers. */
export const WORKSPACE_MOUNT_PATH = '/workspace';
/** runtimed's API credentials, at the path in-cluster clients read. */
export const SERVICE_ACCOUNT_MOUNT_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';
const WORKSPACE_VOLUME = 'workspace';
const API_TOKEN_VOLUME = 'runtime-server-api';
/** The Runtime Server writes its API token here (a memory emptyDir of both containers); runtimed reads it. */
export const API_TOKEN_MOUNT_PATH = '/var/run/kruntimes/api';
/** runtimed's uid and gid, the Pod's: the group the API token is readable to. */
export const RUNTIMED_UID = 65532;
/**
 * The uids (inside the Pod's user namespace, whose 0-65535 the kubelet maps) a walled
 * Runtime Server hands its Runs: far from runtimed's 65532 and the images' system users, and
 * more than a Pod ever runs at once, so that uids whose processes survived can be retired.
 */
export const RUN_UIDS = '20000-29999';
/**
 * What a walled Runtime Server (uid 0 of the Pod's user namespace) may do, and why; nothing of
 * it counts on the node, whose uids the namespace maps to no one else's:
 * - SETUID, SETGID: start each Run as its own uid and gid, with no supplementary groups;
 * - CHOWN, FOWNER: give a Run its directories, make its source read-only to it;
 * - DAC_OVERRIDE: read runtimed's workspace and a Run's outputs, remove a Run's files;
 * - KILL: signal a Run's process group (cancel, timeout, the end of a task).
 */
export const WALLED_RUNTIME_SERVER_CAPABILITIES = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'KILL', 'SETGID', 'SETUID'] as const;
/**
 * What the images' entry (krt-wall-entry) holds before the server starts, and drops from
 * every set: the server and its Runs never hold them. Also of the Pod's user namespace only:
 * - SYS_ADMIN: remount the container's /proc hidepid=invisible (a Run sees no other Run's
 *   processes, command lines or count);
 * - SYS_RESOURCE: set user.max_user_namespaces to 0 there (with SYS_ADMIN in the container the
 *   runtime's default seccomp profile lets Runs call unshare; they may make no user namespace);
 * - SETPCAP: drop the three from the bounding set.
 * The entry sets no_new_privs itself: Kubernetes refuses allowPrivilegeEscalation: false
 * beside SYS_ADMIN, which could undo it. The server refuses to start a Run without it.
 */
export const WALL_ENTRY_CAPABILITIES = ['SETPCAP', 'SYS_ADMIN', 'SYS_RESOURCE'] as const;
const RUNTIMED_TOKEN_VOLUME = 'runtimed-api-access';
const RUNTIMED_TLS_VOLUME = 'runtimed-tls';
/**
 * Keys of the `<runtime>-runtimed-tls` Secret (type kubernetes.io/tls plus the CA), and the
 * gateway's CA when the controller-manager is given one (published as the endpoint's caBundle).
 */
export const TLS_SECRET_KEYS = { ca: 'ca.crt', cert: 'tls.crt', key: 'tls.key', gatewayCa: 'gateway-ca.crt' } as const;
/** Like the kubelet's kube-api-access volume: an hour, refreshed by the kubelet before expiry. */
const TOKEN_EXPIRATION_SECONDS = 3607;

/** Environment variable names the Pod's containers receive (runtimed reads these). */
export const ENV = {
  podName: 'POD_NAME',
  podUID: 'POD_UID',
  podNamespace: 'POD_NAMESPACE',
  podIP: 'POD_IP',
  runtime: 'RUNTIME_NAME',
  language: 'RUNTIME_LANGUAGE',
  grpcPort: 'KRT_GRPC_PORT',
  peerPort: 'KRT_PEER_PORT',
  healthPort: 'KRT_HEALTH_PORT',
  tlsDir: 'KRT_TLS_DIR',
  runsPerPod: 'KRT_RUNS_PER_POD',
  /** The Runtime's spec.drainSeconds: how long runtimed lets running tasks finish once its Pod is told to stop. */
  drainSeconds: 'KRT_DRAIN_SECONDS',
  workspaceDir: 'KRT_WORKSPACE_DIR',
  /** runtimed dials it; the Runtime Server listens on it (runtime-server-core reads KRT_LISTEN). */
  runtimeServerAddress: 'KRT_RUNTIME_SERVER',
  runtimeServerListen: 'KRT_LISTEN',
  /** Where Runs' status.endpoint points, and the file of the CA it carries as caBundle. */
  gatewayHost: 'KRT_GATEWAY_HOST',
  gatewayCaFile: 'KRT_GATEWAY_CA_FILE',
  /** The Runtime's spec.capabilities, comma-separated (set only when it declares any). */
  capabilities: 'KRT_RUNTIME_CAPABILITIES',
  /** The cluster retry policy (runtimed reads it); set only when it forbids automatic retries. */
  automaticRetry: 'KRT_AUTOMATIC_RETRY',
  /** Where runtimed and the Runtime Server export spans (OTLP); set only when tracing is on. */
  otlpEndpoint: 'OTEL_EXPORTER_OTLP_ENDPOINT',
  /** V8 heap flags of both containers' Node (nodeHeapOptions, RUNTIME_SERVER_NODE_OPTIONS). */
  nodeOptions: 'NODE_OPTIONS',
  /** Walled Pods: the Runs' uid range (the Runtime Server reads it). */
  runUids: 'KRT_RUN_UIDS',
  /** Walled Pods: the API token file the Runtime Server writes and runtimed sends, and the group it is readable to. */
  apiTokenFile: 'KRT_API_TOKEN_FILE',
  apiTokenGid: 'KRT_API_TOKEN_GID',
} as const;

/**
 * How the Runs that share a Runtime Pod are kept apart (docs/security-model.md):
 * - `perRunUser`: the Pod has its own user namespace (`hostUsers: false`); each Run is a uid
 *   of its own with its own directories, nothing of it outlives it, and the Runtime Server
 *   answers runtimed only (a per-Pod token). Needs nodes with user namespaces (runc >= 1.2,
 *   kernel >= 6.3 with idmapped mounts for the Pod's filesystems).
 * - `sharedUser`: for nodes without them. Every Run of a Pod is the Pod's one non-root user
 *   with no capabilities: Runs on one Pod can read and signal each other (only `runs: 1` keeps
 *   them apart, and not over time); nothing is given capabilities that would be real on the node.
 */
export type RunIsolation = 'perRunUser' | 'sharedUser';

/**
 * The Runtime Server's Node flags. Its container's memory limit (the Runtime's
 * spec.resources) is mostly its user code's, so nothing is derived from it: only the young
 * generation is kept small (its heap is ~10 MiB; V8's default semi-space of up to 16 MiB
 * would double its resident heap). User processes do not inherit NODE_OPTIONS (process-env.ts).
 */
export const RUNTIME_SERVER_NODE_OPTIONS = '--max-semi-space-size=1';

/**
 * Where the Runtime Server listens. It executes whatever code it is given, so it must
 * never be reachable from outside its Pod:
 * - `loopback` (a real cluster): 127.0.0.1 inside the Pod's network namespace;
 * - `podIP` (the local node, whose Pods share the host's network namespace and each own
 *   one 127.0.0.x address): the Pod's own loopback address, which is the only address
 *   that does not collide with other Pods and is still unreachable from other hosts.
 */
export type RuntimeServerListenMode = 'loopback' | 'podIP';

export interface WorkloadConfig {
  runtimedImage: string;
  /** Runtime Server image per language, used when `spec.image` is not set. */
  runtimeServerImages: Readonly<Record<RuntimeLanguage, string>>;
  /** Service account of Runtime Pods whose Runtime names none. */
  serviceAccountName: string;
  runtimeServerListen: RuntimeServerListenMode;
  /** Default `perRunUser`. */
  runIsolation?: RunIsolation;
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /**
   * Time runtimed has after its drain window to stop what still runs and release registrations (default
   * DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS). A Pod's grace period is its Runtime's spec.drainSeconds plus this.
   */
  terminationGracePeriodSeconds?: number;
  /**
   * The runtime-gateway that function Runs' `status.endpoint` points at (`host[:port]`) and
   * its CA (PEM, kept in the runtimed TLS Secret as `gateway-ca.crt`, published as caBundle).
   * Unset: runtimed's own default host and no caBundle.
   */
  gateway?: GatewayEndpointConfig;
  /**
   * The OTLP endpoint (`http[s]://host:port`, HTTP/protobuf) runtimed and the Runtime
   * Server export their spans to, as OTEL_EXPORTER_OTLP_ENDPOINT of both containers.
   * Unset: tracing off in Runtime Pods (and no env entry: their spec hash stays the same).
   */
  otlpEndpoint?: string;
  /**
   * The cluster retry policy (the chart's global.automaticRetry): false keeps runtimed from
   * running again a retrySafe task whose execution its Pod lost, as stale-recovery does for
   * a lost Pod. Unset or true: allowed, and no env entry (the spec hash stays the same).
   */
  automaticRetry?: boolean;
  /**
   * Requests and limits of every Runtime Pod's runtimed container (the controller-manager's
   * --runtimed-* flags, the chart's controllerManager.runtimedResources). With a memory
   * limit, runtimed's NODE_OPTIONS carries the V8 heap flags derived from it (nodeHeapOptions).
   * Unset: none (a BestEffort runtimed container, V8's own heap sizing).
   */
  runtimedResources?: ResourceRequirements;
}

export interface GatewayEndpointConfig {
  host: string;
  caPem?: string;
}

/** What a Pod has beyond its drain window: the cancel grace of a task still running, and a margin to release and exit. */
export const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = DEFAULTS.cancelGracePeriodSeconds + 20;

/** The drain window, then the stop: spec.drainSeconds plus the stop margin (the config's, or the default). */
export function terminationGracePeriodSeconds(
  runtime: Pick<Runtime, 'spec'>,
  config: Pick<WorkloadConfig, 'terminationGracePeriodSeconds'>,
): number {
  return drainSeconds(runtime) + (config.terminationGracePeriodSeconds ?? DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS);
}

function drainSeconds(runtime: Pick<Runtime, 'spec'>): number {
  return runtime.spec.drainSeconds ?? DEFAULTS.drainSeconds;
}

/** The ports of a Runtime's runtimed, with the CRD's defaults applied. */
export function runtimePorts(runtime: Pick<Runtime, 'spec'>): { grpc: number; peer: number } {
  return { grpc: runtime.spec.ports?.grpc ?? DEFAULTS.runtimedGrpcPort, peer: runtime.spec.ports?.peer ?? DEFAULTS.runtimedPeerPort };
}

/** The labels that select a Runtime's Pods (the Deployment's immutable selector and the Service's). */
export function podSelector(runtimeName: string): Record<string, string> {
  return { [LABELS.runtime]: runtimeName, [LABELS.component]: RUNTIME_COMPONENT };
}

/** `kruntimes.io/runtime=NAME,app.kubernetes.io/component=runtime` */
export function podLabelSelector(runtimeName: string): string {
  return Object.entries(podSelector(runtimeName))
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
}

/** The Deployment and the Service of a Runtime share its name (a Service name is a DNS-1035 label). */
export function workloadName(runtime: Pick<Runtime, 'metadata'>): string {
  return runtime.metadata.name ?? '';
}

const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/**
 * Why a Runtime cannot become a workload (empty: it can). The CRD already bounds the
 * fields one by one; these are the cross-field rules a schema cannot state, reported in
 * the Runtime's conditions instead of as a failing reconcile.
 */
export function workloadProblems(runtime: Pick<Runtime, 'metadata' | 'spec'>): string[] {
  const problems: string[] = [];
  const name = workloadName(runtime);
  if (name.length > 63 || !DNS1035_LABEL.test(name)) {
    problems.push(
      `the Runtime's name ${JSON.stringify(name)} must be a DNS-1035 label (at most 63 characters, starting with a letter) to name its Service`,
    );
  }
  const { grpc, peer } = runtimePorts(runtime);
  if (grpc === peer) problems.push(`ports.grpc and ports.peer are both ${grpc}`);
  // Both containers share one network namespace: runtimed's ports must not take the Runtime Server's.
  for (const [field, port] of [
    ['grpc', grpc],
    ['peer', peer],
  ] as const) {
    if (port === DEFAULTS.runtimeServerPort) problems.push(`ports.${field} ${port} is the Runtime Server's port`);
    if (port === DEFAULTS.runtimedHealthPort) problems.push(`ports.${field} ${port} is runtimed's health port`);
    if (port === DEFAULTS.runtimedMetricsPort) problems.push(`ports.${field} ${port} is runtimed's metrics port`);
  }
  return problems;
}

export interface RuntimeWorkload {
  deployment: Deployment;
  service: Service;
  /** One Pod at a time for evictions (node drains): each goes through its drain before the next. */
  disruptionBudget: PodDisruptionBudget;
}

/**
 * The Deployment, Service and PodDisruptionBudget of a Runtime. Pure: the same Runtime and config give the
 * same objects (and the same spec hash), so the controller can tell "changed" from
 * "defaulted by the API server" without comparing server-side defaults.
 */
export function runtimeWorkload(runtime: Pick<Runtime, 'metadata' | 'spec'>, config: WorkloadConfig): RuntimeWorkload {
  const name = workloadName(runtime);
  const namespace = runtime.metadata.namespace ?? '';
  const labels = workloadLabels(name);
  const owner = ownerReference(runtime);
  const template = podTemplate(runtime, config, labels);
  const deploymentSpec: Deployment['spec'] = {
    replicas: runtime.spec.replicas ?? DEFAULTS.replicas,
    selector: { matchLabels: podSelector(name) },
    // A new Pod is ready before an old one goes: capacity never drops during a roll.
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
    revisionHistoryLimit: 3,
    template,
  };
  const { grpc, peer } = runtimePorts(runtime);
  const serviceSpec: Service['spec'] = {
    type: 'ClusterIP',
    selector: podSelector(name),
    ports: [
      { name: 'grpc', port: grpc, targetPort: 'grpc', protocol: 'TCP', appProtocol: 'grpc' },
      { name: 'peer', port: peer, targetPort: 'peer', protocol: 'TCP', appProtocol: 'grpc' },
    ],
    // The gateway must only reach runtimed instances that are ready to serve.
    publishNotReadyAddresses: false,
  };
  const budgetSpec: PodDisruptionBudget['spec'] = { maxUnavailable: 1, selector: { matchLabels: podSelector(name) } };
  return {
    deployment: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace, labels, annotations: { [SPEC_HASH_ANNOTATION]: specHash(deploymentSpec) }, ownerReferences: [owner] },
      spec: deploymentSpec,
    },
    service: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace, labels, annotations: { [SPEC_HASH_ANNOTATION]: specHash(serviceSpec) }, ownerReferences: [owner] },
      spec: serviceSpec,
    },
    disruptionBudget: {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name, namespace, labels, annotations: { [SPEC_HASH_ANNOTATION]: specHash(budgetSpec) }, ownerReferences: [owner] },
      spec: budgetSpec,
    },
  };
}

/** Labels of every object the controller-manager makes for a Runtime (its informers select on managed-by). */
export function workloadLabels(runtimeName: string): Record<string, string> {
  return { ...podSelector(runtimeName), [LABELS.partOf]: PART_OF, [LABELS.managedBy]: MANAGED_BY };
}

/** PEM contents of the runtimed TLS Secret. */
export interface RuntimedTlsMaterial {
  caPem: string;
  certPem: string;
  keyPem: string;
  /** The gateway's CA (WorkloadConfig.gateway.caPem); no `gateway-ca.crt` key when undefined. */
  gatewayCaPem?: string | undefined;
}

/**
 * The Secret `<runtime>-runtimed-tls` that runtimed's container mounts at
 * RUNTIMED_TLS_MOUNT_PATH: its workload certificate, key and the internal CA, owned by the Runtime.
 */
export function runtimedTlsSecret(runtime: Pick<Runtime, 'metadata'>, tls: RuntimedTlsMaterial): Secret {
  const name = workloadName(runtime);
  const base64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: runtimedTlsSecretName(name),
      namespace: runtime.metadata.namespace ?? '',
      labels: workloadLabels(name),
      ownerReferences: [ownerReference(runtime)],
    },
    type: 'kubernetes.io/tls',
    data: {
      [TLS_SECRET_KEYS.ca]: base64(tls.caPem),
      [TLS_SECRET_KEYS.cert]: base64(tls.certPem),
      [TLS_SECRET_KEYS.key]: base64(tls.keyPem),
      ...(tls.gatewayCaPem === undefined ? {} : { [TLS_SECRET_KEYS.gatewayCa]: base64(tls.gatewayCaPem) }),
    },
  };
}

/** The controller reference that makes the Runtime own (and garbage-collect) its workload. */
export function ownerReference(runtime: Pick<Runtime, 'metadata'>): OwnerReference {
  return {
    apiVersion: API_GROUP_VERSION,
    kind: RUNTIME_KIND,
    name: runtime.metadata.name ?? '',
    uid: runtime.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** The address the Runtime Server listens on and runtimed dials. */
export function runtimeServerAddress(mode: RuntimeServerListenMode): string {
  switch (mode) {
    case 'loopback':
      return `127.0.0.1:${DEFAULTS.runtimeServerPort}`;
    case 'podIP':
      // Expanded by the kubelet from the POD_IP variable defined before it.
      return `$(${ENV.podIP}):${DEFAULTS.runtimeServerPort}`;
  }
}

/**
 * User code runs in these Pods: never as root, whatever image a Runtime names. A walled
 * Pod's Runtime Server alone overrides it (uid 0 of the Pod's user namespace, to start each
 * Run as its own uid); its Runs are never uid 0. The group is set too: the images say USER 65532:65532, but with no passwd entry for that uid
 * containerd resolves only the uid and leaves the group 0 (seen on a real node).
 */
const RUNTIME_POD_SECURITY_CONTEXT: PodSecurityContext = {
  runAsNonRoot: true,
  runAsUser: RUNTIMED_UID,
  runAsGroup: RUNTIMED_UID,
  seccompProfile: { type: 'RuntimeDefault' },
};

function podTemplate(runtime: Pick<Runtime, 'metadata' | 'spec'>, config: WorkloadConfig, labels: Record<string, string>): PodTemplate {
  const name = workloadName(runtime);
  const parts = containerParts(runtime, config, name);
  return {
    metadata: { labels },
    spec: {
      serviceAccountName: runtime.spec.serviceAccountName ?? config.serviceAccountName,
      automountServiceAccountToken: false,
      // Service environment variables would leak every Service of the namespace into user code.
      enableServiceLinks: false,
      terminationGracePeriodSeconds: terminationGracePeriodSeconds(runtime, config),
      ...(walled(config) ? { hostUsers: false } : {}),
      securityContext: RUNTIME_POD_SECURITY_CONTEXT,
      containers: [runtimedContainer(runtime, config, parts), runtimeServerContainer(runtime, config, parts)],
      volumes: podVolumes(name, walled(config)),
    },
  };
}

/** What both containers of a Runtime Pod share. */
interface ContainerParts {
  common: ContainerEnvVar[];
  /** The Runtime Server's listen address, which runtimed dials. */
  address: string;
  securityContext: NonNullable<Container['securityContext']>;
  pullPolicy: Pick<Container, 'imagePullPolicy'>;
  workspaceMount: { name: string; mountPath: string };
}

function containerParts(runtime: Pick<Runtime, 'spec'>, config: WorkloadConfig, name: string): ContainerParts {
  return {
    common: [
      fieldEnv(ENV.podName, 'metadata.name'),
      fieldEnv(ENV.podUID, 'metadata.uid'),
      fieldEnv(ENV.podNamespace, 'metadata.namespace'),
      fieldEnv(ENV.podIP, 'status.podIP'),
      { name: ENV.runtime, value: name },
      { name: ENV.language, value: runtime.spec.language },
      { name: ENV.workspaceDir, value: WORKSPACE_MOUNT_PATH },
      ...(config.otlpEndpoint === undefined || config.otlpEndpoint === '' ? [] : [{ name: ENV.otlpEndpoint, value: config.otlpEndpoint }]),
    ],
    address: runtimeServerAddress(config.runtimeServerListen),
    securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
    pullPolicy: config.imagePullPolicy === undefined ? {} : { imagePullPolicy: config.imagePullPolicy },
    workspaceMount: { name: WORKSPACE_VOLUME, mountPath: WORKSPACE_MOUNT_PATH },
  };
}

function runtimedContainer(runtime: Pick<Runtime, 'metadata' | 'spec'>, config: WorkloadConfig, parts: ContainerParts): Container {
  const { grpc, peer } = runtimePorts(runtime);
  return {
    name: CONTAINERS.runtimed,
    image: config.runtimedImage,
    ...parts.pullPolicy,
    env: [
      ...parts.common,
      { name: ENV.grpcPort, value: String(grpc) },
      { name: ENV.peerPort, value: String(peer) },
      { name: ENV.healthPort, value: String(DEFAULTS.runtimedHealthPort) },
      { name: ENV.tlsDir, value: RUNTIMED_TLS_MOUNT_PATH },
      { name: ENV.runsPerPod, value: String(runtime.spec.runs ?? DEFAULTS.runsPerPod) },
      { name: ENV.drainSeconds, value: String(drainSeconds(runtime)) },
      { name: ENV.runtimeServerAddress, value: parts.address },
      // Only when declared: a Runtime without capabilities keeps its spec hash (no rollout on upgrade).
      ...(runtime.spec.capabilities === undefined || runtime.spec.capabilities.length === 0
        ? []
        : [{ name: ENV.capabilities, value: runtime.spec.capabilities.join(',') }]),
      ...(config.automaticRetry === false ? [{ name: ENV.automaticRetry, value: 'false' }] : []),
      ...gatewayEnv(config.gateway),
      ...runtimedNodeOptions(config.runtimedResources),
      ...(walled(config) ? [{ name: ENV.apiTokenFile, value: API_TOKEN_FILE }] : []),
    ],
    ...(config.runtimedResources === undefined ? {} : { resources: structuredClone(config.runtimedResources) }),
    ports: [
      { name: 'grpc', containerPort: grpc, protocol: 'TCP' },
      { name: 'peer', containerPort: peer, protocol: 'TCP' },
      { name: 'health', containerPort: DEFAULTS.runtimedHealthPort, protocol: 'TCP' },
      // Declared so that the chart's PodMonitor, which selects a named port, finds runtimed's /metrics.
      { name: 'metrics', containerPort: DEFAULTS.runtimedMetricsPort, protocol: 'TCP' },
    ],
    volumeMounts: [
      parts.workspaceMount,
      { name: RUNTIMED_TOKEN_VOLUME, mountPath: SERVICE_ACCOUNT_MOUNT_PATH, readOnly: true },
      { name: RUNTIMED_TLS_VOLUME, mountPath: RUNTIMED_TLS_MOUNT_PATH, readOnly: true },
      ...(walled(config) ? [{ name: API_TOKEN_VOLUME, mountPath: API_TOKEN_MOUNT_PATH, readOnly: true }] : []),
    ],
    // runtimed reports SERVING only while it can reach its Runtime Server and the API server.
    // On the plaintext health port: kubelet gRPC probes cannot speak TLS, which grpc and peer are.
    readinessProbe: { grpc: { port: DEFAULTS.runtimedHealthPort }, periodSeconds: 2, timeoutSeconds: 1, failureThreshold: 2 },
    securityContext: parts.securityContext,
  };
}

function runtimeServerContainer(runtime: Pick<Runtime, 'spec'>, config: WorkloadConfig, parts: ContainerParts): Container {
  return {
    name: CONTAINERS.runtimeServer,
    image: runtime.spec.image ?? config.runtimeServerImages[runtime.spec.language],
    ...parts.pullPolicy,
    env: [
      ...parts.common,
      { name: ENV.runtimeServerListen, value: parts.address },
      { name: ENV.nodeOptions, value: RUNTIME_SERVER_NODE_OPTIONS },
      ...(walled(config)
        ? [
            { name: ENV.runUids, value: RUN_UIDS },
            { name: ENV.apiTokenFile, value: API_TOKEN_FILE },
            { name: ENV.apiTokenGid, value: String(RUNTIMED_UID) },
          ]
        : []),
    ],
    // No service-account volume: user code runs here and must never see runtimed's token.
    volumeMounts: [parts.workspaceMount, ...(walled(config) ? [{ name: API_TOKEN_VOLUME, mountPath: API_TOKEN_MOUNT_PATH }] : [])],
    ...(runtime.spec.resources === undefined ? {} : { resources: structuredClone(runtime.spec.resources) }),
    // The kubelet probes the Pod IP: only a Runtime Server listening there can be probed.
    // On 127.0.0.1 it is unreachable to the kubelet by design, and runtimed's own
    // readiness covers it.
    ...(config.runtimeServerListen === 'podIP'
      ? { readinessProbe: { grpc: { port: DEFAULTS.runtimeServerPort }, periodSeconds: 2, timeoutSeconds: 1, failureThreshold: 2 } }
      : {}),
    securityContext: walled(config) ? WALLED_RUNTIME_SERVER_SECURITY_CONTEXT : parts.securityContext,
  };
}

const API_TOKEN_FILE = `${API_TOKEN_MOUNT_PATH}/token`;

/**
 * uid 0 of the Pod's user namespace, with the capabilities WALLED_RUNTIME_SERVER_CAPABILITIES
 * and WALL_ENTRY_CAPABILITIES say why it needs; no_new_privs comes from the entry.
 */
const WALLED_RUNTIME_SERVER_SECURITY_CONTEXT: Container['securityContext'] = {
  runAsUser: 0,
  runAsGroup: 0,
  runAsNonRoot: false,
  capabilities: { drop: ['ALL'], add: [...WALLED_RUNTIME_SERVER_CAPABILITIES, ...WALL_ENTRY_CAPABILITIES].sort() },
};

/** Whether the Runtime's Pods run each Run as its own user (the default). */
export function runIsolation(config: Pick<WorkloadConfig, 'runIsolation'>): RunIsolation {
  return config.runIsolation ?? 'perRunUser';
}

function walled(config: Pick<WorkloadConfig, 'runIsolation'>): boolean {
  return runIsolation(config) === 'perRunUser';
}

/** runtimed's NODE_OPTIONS from its memory limit; none without one (or with a quantity nodeHeapOptions does not read). */
function runtimedNodeOptions(resources: ResourceRequirements | undefined): ContainerEnvVar[] {
  const limit = resources?.limits?.memory;
  const bytes = limit === undefined ? undefined : memoryQuantityBytes(limit);
  return bytes === undefined ? [] : [{ name: ENV.nodeOptions, value: nodeHeapOptions(bytes) }];
}

function podVolumes(name: string, walledPod: boolean): Volume[] {
  return [
    { name: WORKSPACE_VOLUME, emptyDir: {} },
    // The Runtime Server makes it 0750 root:runtimed before writing its token: no Run enters it.
    ...(walledPod ? [{ name: API_TOKEN_VOLUME, emptyDir: { medium: 'Memory' as const, sizeLimit: '1Mi' } }] : []),
    {
      // The Pod-level token is off (automountServiceAccountToken: false), so that the
      // Runtime Server container gets none; runtimed gets the same three files the
      // kubelet's kube-api-access volume holds, from this volume only.
      name: RUNTIMED_TOKEN_VOLUME,
      projected: {
        defaultMode: 0o444,
        sources: [
          { serviceAccountToken: { path: 'token', expirationSeconds: TOKEN_EXPIRATION_SECONDS } },
          { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
          { downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
        ],
      },
    },
    {
      // runtimed's workload certificate, kept by the controller-manager. Not optional: a Pod
      // without it could not serve TLS, so it waits (ContainerCreating) until it exists.
      // World-readable like the token volume (runtimed may run as any user, no fsGroup);
      // only runtimed's container mounts it.
      name: RUNTIMED_TLS_VOLUME,
      secret: { secretName: runtimedTlsSecretName(name), defaultMode: 0o444, optional: false },
    },
  ];
}

/** The part of a Pod that `podCapacity` reads (a client-node V1Pod, cached or not, fits). */
export interface PodWithContainers {
  readonly spec?: {
    readonly containers: readonly { readonly name: string; readonly env?: readonly { readonly name: string; readonly value?: string }[] }[];
  };
}

/**
 * The Run capacity a Runtime Pod was created with: its runtimed's `KRT_RUNS_PER_POD`.
 * Capacity belongs to the Pod, like a Node's allocatable: while a change of `spec.runs`
 * rolls out, old and new Pods rightly differ. Undefined for a Pod that does not say.
 */
export function podCapacity(pod: PodWithContainers): number | undefined {
  const value = pod.spec?.containers.find((c) => c.name === CONTAINERS.runtimed)?.env?.find((e) => e.name === ENV.runsPerPod)?.value;
  const parsed = Number(value);
  return value !== undefined && Number.isInteger(parsed) && parsed >= 0 ? parsed : undefined;
}

/**
 * runtimed's gateway settings: only when configured, so that a Pod template without them is
 * exactly what it was (same spec hash, no roll). The CA is a file of the mounted TLS Secret;
 * its content is not in the template (a changed CA rewrites the Secret, not the Deployment).
 */
function gatewayEnv(gateway: GatewayEndpointConfig | undefined): ContainerEnvVar[] {
  if (gateway === undefined) return [];
  return [
    { name: ENV.gatewayHost, value: gateway.host },
    ...(gateway.caPem === undefined ? [] : [{ name: ENV.gatewayCaFile, value: `${RUNTIMED_TLS_MOUNT_PATH}/${TLS_SECRET_KEYS.gatewayCa}` }]),
  ];
}

function fieldEnv(name: string, fieldPath: string): ContainerEnvVar {
  return { name, valueFrom: { fieldRef: { fieldPath } } };
}

/** SHA-256 of the canonical JSON (sorted keys) of a value, shortened to 16 hex digits. */
export function specHash(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, 16);
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
