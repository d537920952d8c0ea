import { AppsV1Api, CoordinationV1Api, CoreV1Api, CustomObjectsApi, DiscoveryV1Api } from '@kubernetes/client-node';
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { ControllerLogger } from './controller.ts';
import { SharedInformer } from './informer.ts';
import type { ListChunk, Transform } from './informer.ts';

/** What to list and watch: one resource, in one namespace or all, optionally filtered on the server. */
export interface WatchSpec {
  /** API group; '' for the core group. */
  group: string;
  version: string;
  plural: string;
  /** Namespace to watch; undefined watches all namespaces. */
  namespace?: string | undefined;
  labelSelector?: string;
  fieldSelector?: string;
  /** Name in log lines; default: the plural. */
  name?: string;
  /** What the cache keeps of each object; default: all but managedFields. */
  projection?: Projection;
}

/**
 * A named transform (see Transform): two components of one process that ask for the same
 * resource with the same projection share one cache; with different ones, each has its own
 * watch, so a process should name one projection per resource that covers all its readers.
 */
export interface Projection {
  name: string;
  /** Takes and returns objects of the cache's element type, which is the caller's to name (see informer()). */
  keep: (object: never) => unknown;
}

export interface InformerFactoryOptions {
  kubeConfig: KubeConfig;
  logger: ControllerLogger;
}

interface ListQuery extends ListChunk {
  namespace: string | undefined;
  labelSelector?: string;
  fieldSelector?: string;
}

type Lister = (query: ListQuery) => Promise<KubernetesListObject<KubernetesObject>>;

/**
 * Builds each shared informer once per (resource, namespace, selectors), so the
 * components of a process state what they watch in a line each and never open two
 * watches for the same thing. Like client-go's SharedInformerFactory, `start()` starts
 * what was asked for so far and waits until all of it has synced.
 */
export class InformerFactory {
  readonly #kubeConfig: KubeConfig;
  readonly #logger: ControllerLogger;
  readonly #informers = new Map<string, SharedInformer<KubernetesObject>>();
  #clients: Clients | undefined;

  constructor(options: InformerFactoryOptions) {
    this.#kubeConfig = options.kubeConfig;
    this.#logger = options.logger;
  }

  /** A shared informer: the same spec returns the same instance. */
  informer<T extends KubernetesObject>(spec: WatchSpec): SharedInformer<T> {
    const key = watchSpecKey(spec);
    let informer = this.#informers.get(key);
    if (informer === undefined) {
      const lister = this.#lister(spec);
      const query: Omit<ListQuery, keyof ListChunk> = {
        namespace: spec.namespace,
        ...(spec.labelSelector === undefined ? {} : { labelSelector: spec.labelSelector }),
        ...(spec.fieldSelector === undefined ? {} : { fieldSelector: spec.fieldSelector }),
      };
      informer = new SharedInformer<KubernetesObject>({
        name: spec.name ?? spec.plural,
        kubeConfig: this.#kubeConfig,
        path: watchPath(spec),
        list: (chunk) => lister({ ...query, ...chunk }),
        ...(spec.projection === undefined ? {} : { transform: spec.projection.keep as unknown as Transform<KubernetesObject> }),
        ...(spec.labelSelector === undefined ? {} : { labelSelector: spec.labelSelector }),
        logger: this.#logger,
      });
      this.#informers.set(key, informer);
    }
    // The map is keyed by the resource, so the element type is the caller's to name.
    return informer as unknown as SharedInformer<T>;
  }

  /** Starts every informer made so far and resolves once all have synced. */
  async start(): Promise<void> {
    await Promise.all([...this.#informers.values()].map((informer) => informer.start()));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#informers.values()].map((informer) => informer.stop()));
  }

  #lister(spec: WatchSpec): Lister {
    this.#clients ??= makeClients(this.#kubeConfig);
    return listerFor(this.#clients, spec);
  }
}

/** The watch path; the informer has no field selector option, so the path carries it as a query. */
export function watchPath(spec: WatchSpec): string {
  const base = spec.group === '' ? `/api/${spec.version}` : `/apis/${spec.group}/${spec.version}`;
  const scope = spec.namespace === undefined ? '' : `/namespaces/${spec.namespace}`;
  const query = spec.fieldSelector === undefined ? '' : `?fieldSelector=${encodeURIComponent(spec.fieldSelector)}`;
  return `${base}${scope}/${spec.plural}${query}`;
}

/** Identity of a watch: two specs that list and watch the same objects share one informer. */
export function watchSpecKey(spec: WatchSpec): string {
  return JSON.stringify([
    spec.group,
    spec.version,
    spec.plural,
    spec.namespace ?? null,
    spec.labelSelector ?? '',
    spec.fieldSelector ?? '',
    spec.projection?.name ?? '',
  ]);
}

interface Clients {
  core: CoreV1Api;
  apps: AppsV1Api;
  coordination: CoordinationV1Api;
  discovery: DiscoveryV1Api;
  custom: CustomObjectsApi;
}

function makeClients(kubeConfig: KubeConfig): Clients {
  return {
    core: kubeConfig.makeApiClient(CoreV1Api),
    apps: kubeConfig.makeApiClient(AppsV1Api),
    coordination: kubeConfig.makeApiClient(CoordinationV1Api),
    discovery: kubeConfig.makeApiClient(DiscoveryV1Api),
    custom: kubeConfig.makeApiClient(CustomObjectsApi),
  };
}

/** One list call, all namespaces or one. */
function scoped<T>(all: (q: Omit<ListQuery, 'namespace'>) => Promise<T>, one: (q: ListQuery & { namespace: string }) => Promise<T>) {
  return ({ namespace, ...rest }: ListQuery): Promise<T> => (namespace === undefined ? all(rest) : one({ ...rest, namespace }));
}

/**
 * Built-in resources are listed through their typed clients, which turn timestamps into
 * Dates as the components have always read them; everything else (the kruntimes CRDs)
 * through the custom-objects client.
 */
function listerFor({ core, apps, coordination, discovery, custom }: Clients, spec: WatchSpec): Lister {
  const resource = `${spec.group}/${spec.version}/${spec.plural}`;
  const typed: Record<string, Lister | undefined> = {
    '/v1/pods': scoped(
      (q) => core.listPodForAllNamespaces(q),
      (q) => core.listNamespacedPod(q),
    ),
    '/v1/services': scoped(
      (q) => core.listServiceForAllNamespaces(q),
      (q) => core.listNamespacedService(q),
    ),
    '/v1/secrets': scoped(
      (q) => core.listSecretForAllNamespaces(q),
      (q) => core.listNamespacedSecret(q),
    ),
    '/v1/configmaps': scoped(
      (q) => core.listConfigMapForAllNamespaces(q),
      (q) => core.listNamespacedConfigMap(q),
    ),
    // Cluster-scoped: there is no namespace to list in.
    '/v1/namespaces': ({ namespace: _namespace, ...q }) => core.listNamespace(q),
    '/v1/events': scoped(
      (q) => core.listEventForAllNamespaces(q),
      (q) => core.listNamespacedEvent(q),
    ),
    'apps/v1/deployments': scoped(
      (q) => apps.listDeploymentForAllNamespaces(q),
      (q) => apps.listNamespacedDeployment(q),
    ),
    'apps/v1/replicasets': scoped(
      (q) => apps.listReplicaSetForAllNamespaces(q),
      (q) => apps.listNamespacedReplicaSet(q),
    ),
    'coordination.k8s.io/v1/leases': scoped(
      (q) => coordination.listLeaseForAllNamespaces(q),
      (q) => coordination.listNamespacedLease(q),
    ),
    'discovery.k8s.io/v1/endpointslices': scoped(
      (q) => discovery.listEndpointSliceForAllNamespaces(q),
      (q) => discovery.listNamespacedEndpointSlice(q),
    ),
  };
  const builtIn = typed[resource];
  if (builtIn !== undefined) return builtIn;
  if (spec.group === '') throw new RangeError(`InformerFactory: no lister for core resource ${spec.plural}; add it to listerFor`);
  const { group, version, plural } = spec;
  return scoped(
    (q) => custom.listClusterCustomObject({ group, version, plural, ...q }) as Promise<KubernetesListObject<KubernetesObject>>,
    (q) => custom.listNamespacedCustomObject({ group, version, plural, ...q }) as Promise<KubernetesListObject<KubernetesObject>>,
  );
}
