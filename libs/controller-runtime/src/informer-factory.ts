import { AppsV1Api, CoordinationV1Api, CoreV1Api, CustomObjectsApi, DiscoveryV1Api } from '@kubernetes/client-node';
import type {
  CoreV1Event,
  KubeConfig,
  V1Deployment,
  V1Lease,
  V1Namespace,
  V1Pod,
  V1PodDisruptionBudget,
  V1ReplicaSet,
  V1Secret,
  V1Service,
} from '@kubernetes/client-node';
import {
  API_GROUP,
  API_VERSION,
  ARTIFACT_STORE_PLURAL,
  RUN_INPUT_PLURAL,
  RUN_PLURAL,
  RUN_SCHEDULE_PLURAL,
  RUNTIME_PLURAL,
} from '@kruntimes/api';
import type { ArtifactStore, Run, RunInput, RunSchedule, Runtime } from '@kruntimes/api';
import type { ControllerLogger } from './controller.ts';
import { SharedInformer } from './informer.ts';
import type { ListChunk, ListPage } from './informer.ts';
import type { CachedObject } from './informer-index.ts';

/** What to list and watch: one resource, in one namespace or all, optionally filtered on the server. */
export interface WatchSpec<T = never> extends WatchOptions<T> {
  /** API group; '' for the core group. */
  group: string;
  version: string;
  plural: string;
}

/** What to watch of one kind: its namespace, selectors, log name and projection (see WatchSpec). */
export interface WatchOptions<T = never> {
  /** Namespace to watch; undefined watches all namespaces. */
  namespace?: string | undefined;
  labelSelector?: string;
  fieldSelector?: string;
  /** Name in log lines; default: the plural. */
  name?: string;
  /** What the cache keeps of each object; default: all but managedFields. */
  projection?: Projection<T>;
}

/**
 * A named transform (see Transform): two components of one process that ask for the same
 * resource with the same projection share one cache; with different ones, each has its own
 * watch, so a process should name one projection per resource that covers all its readers.
 * `Projection` of no kind is any projection (a table of several kinds', the untyped informer()'s).
 */
export type Projection<T = never> = [T] extends [never] ? AnyProjection : KindProjection<T>;

/** A projection of objects of T: what the cache keeps of each, fresh from JSON. */
export interface KindProjection<T> {
  name: string;
  keep: (object: T) => T;
}

/** A projection of some kind: it takes an object of its kind. */
export interface AnyProjection {
  name: string;
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

type Lister = (query: ListQuery) => Promise<ListPage<unknown>>;

/** A kind's resource: the typed accessors of InformerFactory bind each to its type. */
type Resource = Pick<WatchSpec, 'group' | 'version' | 'plural'>;

const kruntimes = (plural: string): Resource => ({ group: API_GROUP, version: API_VERSION, plural });
const core = (plural: string): Resource => ({ group: '', version: 'v1', plural });

/**
 * Builds each shared informer once per (resource, namespace, selectors), so the
 * components of a process state what they watch in a line each and never open two
 * watches for the same thing. Like client-go's SharedInformerFactory, `start()` starts
 * what was asked for so far and waits until all of it has synced.
 */
export class InformerFactory {
  readonly #kubeConfig: KubeConfig;
  readonly #logger: ControllerLogger;
  /** Informers of many kinds, by watch: what the factory itself does with each is start and stop it. */
  readonly #informers = new Map<string, Pick<SharedInformer<CachedObject>, 'start' | 'stop'>>();
  #clients: Clients | undefined;

  constructor(options: InformerFactoryOptions) {
    this.#kubeConfig = options.kubeConfig;
    this.#logger = options.logger;
  }

  runs(options: WatchOptions<Run> = {}): SharedInformer<Run> {
    return this.informer<Run>({ ...kruntimes(RUN_PLURAL), ...options });
  }

  runtimes(options: WatchOptions<Runtime> = {}): SharedInformer<Runtime> {
    return this.informer<Runtime>({ ...kruntimes(RUNTIME_PLURAL), ...options });
  }

  runInputs(options: WatchOptions<RunInput> = {}): SharedInformer<RunInput> {
    return this.informer<RunInput>({ ...kruntimes(RUN_INPUT_PLURAL), ...options });
  }

  runSchedules(options: WatchOptions<RunSchedule> = {}): SharedInformer<RunSchedule> {
    return this.informer<RunSchedule>({ ...kruntimes(RUN_SCHEDULE_PLURAL), ...options });
  }

  artifactStores(options: WatchOptions<ArtifactStore> = {}): SharedInformer<ArtifactStore> {
    return this.informer<ArtifactStore>({ ...kruntimes(ARTIFACT_STORE_PLURAL), ...options });
  }

  pods(options: WatchOptions<V1Pod> = {}): SharedInformer<V1Pod> {
    return this.informer<V1Pod>({ ...core('pods'), ...options });
  }

  services(options: WatchOptions<V1Service> = {}): SharedInformer<V1Service> {
    return this.informer<V1Service>({ ...core('services'), ...options });
  }

  secrets(options: WatchOptions<V1Secret> = {}): SharedInformer<V1Secret> {
    return this.informer<V1Secret>({ ...core('secrets'), ...options });
  }

  /** Cluster-scoped, so no namespace: a field selector on metadata.name picks one. */
  namespaces(options: Omit<WatchOptions<V1Namespace>, 'namespace'> = {}): SharedInformer<V1Namespace> {
    return this.informer<V1Namespace>({ ...core('namespaces'), ...options, namespace: undefined });
  }

  events(options: WatchOptions<CoreV1Event> = {}): SharedInformer<CoreV1Event> {
    return this.informer<CoreV1Event>({ ...core('events'), ...options });
  }

  deployments(options: WatchOptions<V1Deployment> = {}): SharedInformer<V1Deployment> {
    return this.informer<V1Deployment>({ group: 'apps', version: 'v1', plural: 'deployments', ...options });
  }

  replicaSets(options: WatchOptions<V1ReplicaSet> = {}): SharedInformer<V1ReplicaSet> {
    return this.informer<V1ReplicaSet>({ group: 'apps', version: 'v1', plural: 'replicasets', ...options });
  }

  podDisruptionBudgets(options: WatchOptions<V1PodDisruptionBudget> = {}): SharedInformer<V1PodDisruptionBudget> {
    return this.informer<V1PodDisruptionBudget>({ group: 'policy', version: 'v1', plural: 'poddisruptionbudgets', ...options });
  }

  leases(options: WatchOptions<V1Lease> = {}): SharedInformer<V1Lease> {
    return this.informer<V1Lease>({ group: 'coordination.k8s.io', version: 'v1', plural: 'leases', ...options });
  }

  /**
   * A shared informer of any resource: the same spec returns the same instance. The caller
   * names the element type; the typed accessors above bind each kind's to its resource.
   */
  informer<T extends CachedObject>(spec: WatchSpec<T>): SharedInformer<T> {
    const key = watchSpecKey(spec);
    const shared = this.#informers.get(key);
    // Keyed by the resource: the caller that made it named the same kind.
    if (shared !== undefined) return shared as SharedInformer<T>;
    const informer = this.#build<T>(spec);
    this.#informers.set(key, informer);
    return informer;
  }

  /** Starts every informer made so far and resolves once all have synced. */
  async start(): Promise<void> {
    await Promise.all([...this.#informers.values()].map((informer) => informer.start()));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#informers.values()].map((informer) => informer.stop()));
  }

  #build<T extends CachedObject>(spec: WatchSpec<T>): SharedInformer<T> {
    this.#clients ??= makeClients(this.#kubeConfig);
    const lister = listerFor(this.#clients, spec);
    const query: Omit<ListQuery, keyof ListChunk> = {
      namespace: spec.namespace,
      ...(spec.labelSelector === undefined ? {} : { labelSelector: spec.labelSelector }),
      ...(spec.fieldSelector === undefined ? {} : { fieldSelector: spec.fieldSelector }),
    };
    // A projection given with the kind it is of (WatchOptions<T>), or claimed to be of it (the untyped informer()).
    const projection = spec.projection as KindProjection<T> | undefined;
    return new SharedInformer<T>({
      name: spec.name ?? spec.plural,
      kubeConfig: this.#kubeConfig,
      path: watchPath(spec),
      // The one place a listed object is claimed to be of the kind its resource serves.
      list: async (chunk) => (await lister({ ...query, ...chunk })) as ListPage<T>,
      ...(projection === undefined ? {} : { transform: projection.keep }),
      ...(spec.labelSelector === undefined ? {} : { labelSelector: spec.labelSelector }),
      logger: this.#logger,
    });
  }
}

/** The watch path; the informer has no field selector option, so the path carries it as a query. */
export function watchPath<T>(spec: WatchSpec<T>): string {
  const base = spec.group === '' ? `/api/${spec.version}` : `/apis/${spec.group}/${spec.version}`;
  const scope = spec.namespace === undefined ? '' : `/namespaces/${spec.namespace}`;
  const query = spec.fieldSelector === undefined ? '' : `?fieldSelector=${encodeURIComponent(spec.fieldSelector)}`;
  return `${base}${scope}/${spec.plural}${query}`;
}

/** Identity of a watch: two specs that list and watch the same objects share one informer. */
export function watchSpecKey<T>(spec: WatchSpec<T>): string {
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
function listerFor({ core, apps, coordination, discovery, custom }: Clients, spec: Resource): Lister {
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
    (q) => custom.listClusterCustomObject({ group, version, plural, ...q }) as Promise<ListPage<unknown>>,
    (q) => custom.listNamespacedCustomObject({ group, version, plural, ...q }) as Promise<ListPage<unknown>>,
  );
}
