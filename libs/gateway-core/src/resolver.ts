import { resolveSrv } from 'node:dns/promises';
import { CoreV1Api, DiscoveryV1Api } from '@kubernetes/client-node';
import type { KubeConfig, V1EndpointSlice, V1Pod, V1Service } from '@kubernetes/client-node';
import { DEFAULTS, LABELS } from '@kruntimes/api';
import { SharedInformer, serviceEndpoints } from '@kruntimes/controller-runtime';
import type { ControllerLogger, ReadonlyDeep } from '@kruntimes/controller-runtime';

/** One address to dial for a Runtime's runtimed gRPC port. */
export interface UpstreamAddress {
  /** host:port (an IP in endpoints mode, the Service DNS name in dns mode). */
  address: string;
  /** The Pod's IP, when the address is a Pod's (what an owner hint is matched against). */
  ip?: string;
  /** For logs: the Pod behind it, when known. */
  pod?: string;
}

/**
 * Where a Runtime's ready runtimed instances are, in the order to try them. The first
 * is dialled; the next one only when the first could not even be connected to.
 */
export interface UpstreamResolver {
  resolve(namespace: string, runtime: string): Promise<UpstreamAddress[]>;
  stop(): Promise<void>;
}

/** The DNS name runtimed's certificate is verified against, whatever address is dialled. */
export function runtimedServerName(namespace: string, runtime: string): string {
  return `${runtime}.${namespace}.svc`;
}

/** The name of the Service port the gateway dials (runtime-workload names it so). */
export const GRPC_PORT_NAME = 'grpc';

/**
 * Mode `dns` (in a cluster): the Runtime's Service by name; kube-proxy spreads the
 * connections over its ready endpoints. The port is the Service's named port `grpc`,
 * found with the SRV record cluster DNS publishes for it (a Runtime may choose its
 * ports), falling back to the default port when there is none.
 */
export class DnsResolver implements UpstreamResolver {
  readonly #clusterDomain: string;
  readonly #resolveSrv: (name: string) => Promise<{ port: number }[]>;
  readonly #now: () => number;
  readonly #ports = new Map<string, { port: number; until: number }>();

  constructor(options: { clusterDomain?: string; resolveSrv?: (name: string) => Promise<{ port: number }[]>; now?: () => number } = {}) {
    this.#clusterDomain = options.clusterDomain ?? 'cluster.local';
    this.#resolveSrv = options.resolveSrv ?? resolveSrv;
    this.#now = options.now ?? Date.now;
  }

  async resolve(namespace: string, runtime: string): Promise<UpstreamAddress[]> {
    const host = runtimedServerName(namespace, runtime);
    return [{ address: `${host}:${await this.#port(host)}` }];
  }

  async #port(host: string): Promise<number> {
    const cached = this.#ports.get(host);
    if (cached !== undefined && cached.until > this.#now()) return cached.port;
    let port: number = DEFAULTS.runtimedGrpcPort;
    try {
      const records = await this.#resolveSrv(`_${GRPC_PORT_NAME}._tcp.${host}.${this.#clusterDomain}`);
      port = records[0]?.port ?? port;
    } catch {
      // No SRV record (no such Service, or DNS without SRV): the default port; the dial tells.
    }
    if (this.#ports.size > 4096) this.#ports.clear();
    this.#ports.set(host, { port, until: this.#now() + 30_000 });
    return port;
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }
}

const RUNTIME_SELECTOR = `${LABELS.component}=runtime,${LABELS.runtime}`;

/**
 * The ready endpoints rotated round-robin per Runtime: each call starts one further, so the
 * invokes without an owner hint (a Run's first) spread over every runtimed.
 */
function rotated(next: Map<string, number>, key: string, ready: readonly UpstreamAddress[]): UpstreamAddress[] {
  if (ready.length <= 1) return [...ready];
  const start = (next.get(key) ?? 0) % ready.length;
  next.set(key, start + 1);
  if (next.size > 4096) next.clear();
  return [...ready.slice(start), ...ready.slice(0, start)];
}

/**
 * Mode `endpoints` (the local cluster): a watch-backed cache of the Runtimes' Services
 * and Pods, and the ready endpoints computed from them as the EndpointSlice controller
 * would. Why not the slices: the API server refuses loopback addresses in them, and the
 * local cluster's Pods live on 127.0.0.x. Ready endpoints are rotated round-robin per
 * Runtime. The invoke path reads only the cache, never the API server.
 */
export class EndpointsResolver implements UpstreamResolver {
  readonly #services: SharedInformer<V1Service>;
  readonly #pods: SharedInformer<V1Pod>;
  readonly #next = new Map<string, number>();
  /**
   * The ready endpoints per Runtime, computed once from the caches and forgotten at any
   * change of either (so an invoke does not list, filter and sort Pods every time).
   */
  readonly #ready = new Map<string, UpstreamAddress[]>();

  constructor(options: { kubeConfig: KubeConfig; namespace?: string; logger: ControllerLogger }) {
    const { kubeConfig, namespace, logger } = options;
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const prefix = namespace === undefined ? '' : `/namespaces/${namespace}`;
    const labelSelector = RUNTIME_SELECTOR;
    this.#services = new SharedInformer<V1Service>({
      name: 'runtime-services',
      kubeConfig,
      path: `/api/v1${prefix}/services`,
      labelSelector,
      list: () =>
        namespace === undefined
          ? core.listServiceForAllNamespaces({ labelSelector })
          : core.listNamespacedService({ namespace, labelSelector }),
      logger,
    });
    this.#pods = new SharedInformer<V1Pod>({
      name: 'runtime-pods',
      kubeConfig,
      path: `/api/v1${prefix}/pods`,
      labelSelector,
      list: () =>
        namespace === undefined ? core.listPodForAllNamespaces({ labelSelector }) : core.listNamespacedPod({ namespace, labelSelector }),
      logger,
    });
    const forget = (): void => {
      this.#ready.clear();
    };
    for (const informer of [this.#services, this.#pods]) informer.addEventHandler({ add: forget, update: forget, delete: forget });
  }

  /** Resolves once both caches hold a complete list. */
  async start(): Promise<void> {
    await Promise.all([this.#services.start(), this.#pods.start()]);
  }

  resolve(namespace: string, runtime: string): Promise<UpstreamAddress[]> {
    const key = `${namespace}/${runtime}`;
    let ready = this.#ready.get(key);
    if (ready === undefined) {
      ready = this.#readyEndpoints(namespace, runtime);
      if (this.#ready.size > 4096) this.#ready.clear();
      this.#ready.set(key, ready);
    }
    return Promise.resolve(rotated(this.#next, key, ready));
  }

  #readyEndpoints(namespace: string, runtime: string): UpstreamAddress[] {
    const service = this.#services.get(runtime, namespace);
    if (service === undefined) return [];
    const pods = this.#pods.list(namespace).filter((pod) => pod.metadata?.labels?.[LABELS.runtime] === runtime);
    // Sorted: the round-robin position must mean the same endpoint from call to call.
    const endpoints = serviceEndpoints(service, pods).sort((a, b) => a.podName.localeCompare(b.podName));
    return endpoints.flatMap((endpoint) => {
      const port = endpoint.ports[GRPC_PORT_NAME];
      return port === undefined ? [] : [{ address: hostPort(endpoint.ip, port), ip: endpoint.ip, pod: endpoint.podName }];
    });
  }

  async stop(): Promise<void> {
    await Promise.all([this.#services.stop(), this.#pods.stop()]);
  }
}

/** `ip:port`, an IPv6 address in brackets. */
export function hostPort(ip: string, port: number): string {
  return `${ip.includes(':') ? `[${ip}]` : ip}:${String(port)}`;
}

/** The label the EndpointSlice controller puts on each slice of a Service: the Service's name. */
const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/**
 * The ready runtimed endpoints of one Service's EndpointSlices: each endpoint whose
 * condition is ready (unset means ready, as the API documents) and not terminating, at the
 * port named `grpc` of its slice; one per IP (a Pod may be in two slices while they are
 * rebalanced), sorted so that the round-robin position means the same endpoint each time.
 */
export function readyEndpointsOfSlices(slices: readonly ReadonlyDeep<V1EndpointSlice>[]): UpstreamAddress[] {
  const byIp = new Map<string, UpstreamAddress>();
  for (const slice of slices) {
    if (slice.addressType !== 'IPv4' && slice.addressType !== 'IPv6') continue;
    const port = slice.ports?.find((candidate) => candidate.name === GRPC_PORT_NAME)?.port;
    if (port === undefined) continue;
    for (const endpoint of slice.endpoints ?? []) {
      const ip = endpoint.addresses[0];
      if (ip === undefined || endpoint.conditions?.ready === false || endpoint.conditions?.terminating === true) continue;
      const pod = endpoint.targetRef?.kind === 'Pod' ? endpoint.targetRef.name : undefined;
      byIp.set(ip, { address: hostPort(ip, port), ip, ...(pod === undefined ? {} : { pod }) });
    }
  }
  return [...byIp.values()].sort((a, b) => (a.ip ?? '').localeCompare(b.ip ?? ''));
}

/**
 * Mode `endpointslices` (a cluster; the chart's default): every ready runtimed of a Runtime,
 * from a watch of the Runtime Services' EndpointSlices, balanced round-robin and dialled by
 * Pod IP (so one gateway's connections reach every runtimed, not the one kube-proxy picked
 * for its single connection to the Service). Why EndpointSlices and not a headless
 * Service's DNS A records: no second Service per Runtime (whose name could collide with
 * another Runtime's), readiness as soon as the slice changes instead of after DNS caches
 * expire, and the least access that gives it: `list` and `watch` of endpointslices,
 * selected by the labels the EndpointSlice controller copies from the Runtime's Service
 * (no Pods, no Services, no Secrets). The invoke path reads only the cache.
 */
export class EndpointSliceResolver implements UpstreamResolver {
  readonly #slices: SharedInformer<V1EndpointSlice>;
  readonly #next = new Map<string, number>();
  /** The ready endpoints per Runtime, computed once from the cache and forgotten at any change. */
  readonly #ready = new Map<string, UpstreamAddress[]>();

  constructor(options: { kubeConfig: KubeConfig; namespace?: string; logger: ControllerLogger }) {
    const { kubeConfig, namespace, logger } = options;
    const discovery = kubeConfig.makeApiClient(DiscoveryV1Api);
    const prefix = namespace === undefined ? '' : `/namespaces/${namespace}`;
    const labelSelector = RUNTIME_SELECTOR;
    this.#slices = new SharedInformer<V1EndpointSlice>({
      name: 'runtime-endpointslices',
      kubeConfig,
      path: `/apis/discovery.k8s.io/v1${prefix}/endpointslices`,
      labelSelector,
      list: () =>
        namespace === undefined
          ? discovery.listEndpointSliceForAllNamespaces({ labelSelector })
          : discovery.listNamespacedEndpointSlice({ namespace, labelSelector }),
      logger,
    });
    const forget = (): void => {
      this.#ready.clear();
    };
    this.#slices.addEventHandler({ add: forget, update: forget, delete: forget });
  }

  /** Resolves once the cache holds a complete list. */
  async start(): Promise<void> {
    await this.#slices.start();
  }

  resolve(namespace: string, runtime: string): Promise<UpstreamAddress[]> {
    const key = `${namespace}/${runtime}`;
    let ready = this.#ready.get(key);
    if (ready === undefined) {
      ready = readyEndpointsOfSlices(
        this.#slices.list(namespace).filter((slice) => slice.metadata?.labels?.[SERVICE_NAME_LABEL] === runtime),
      );
      if (this.#ready.size > 4096) this.#ready.clear();
      this.#ready.set(key, ready);
    }
    return Promise.resolve(rotated(this.#next, key, ready));
  }

  async stop(): Promise<void> {
    await this.#slices.stop();
  }
}
