import { ApiException, AppsV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { KubeConfig, KubernetesListObject, KubernetesObject, V1Deployment, V1Pod, V1Secret, V1Service } from '@kubernetes/client-node';
import {
  API_GROUP,
  API_VERSION,
  LABELS,
  REGISTRATION_CLEANUP_FINALIZER,
  RUN_PLURAL,
  RUNTIME_KIND,
  RUNTIME_PLURAL,
  runtimedTlsSecretName,
} from '@kruntimes/api';
import type { Run, RunPhase, Runtime, RuntimeStatus } from '@kruntimes/api';
import { Controller, SharedInformer, isPodReady, splitObjectKey } from '@kruntimes/controller-runtime';
import type { ControllerLogger, ReadonlyDeep, ReconcileResult } from '@kruntimes/controller-runtime';
import { currentPhase, holdsCapacity } from '@kruntimes/run-state';
import {
  MANAGED_BY,
  RUNTIME_COMPONENT,
  SPEC_HASH_ANNOTATION,
  TLS_SECRET_KEYS,
  podCapacity,
  runtimedTlsSecret,
  runtimeWorkload,
  workloadProblems,
} from '@kruntimes/runtime-workload';
import type { Deployment, Secret, Service, WorkloadConfig } from '@kruntimes/runtime-workload';
import { issueWorkloadCertificate, validateCertificateAuthority } from '@kruntimes/workload-pki';
import type { CertificateAuthority } from '@kruntimes/workload-pki';
import { historyToCollect, ttlDecision } from './collection.ts';
import type { CollectableRun } from './collection.ts';
import { runtimeStatus, sameStatus } from './runtime-status.ts';
import { decodeSecretData, tlsSecretDecision } from './runtime-tls.ts';
import { validateGatewayCaPem, validateGatewayHost } from './gateway-endpoint.ts';
import type { ManagerMetrics, ManagerMetricsSnapshot } from './metrics.ts';
import type { RolloutView } from './runtime-status.ts';

type RunObject = Run & KubernetesObject;
type RuntimeObject = Runtime & KubernetesObject;

export const DEFAULT_FINISHED_RUNS_PER_RUNTIME = 100;

export interface ControllerManagerOptions {
  kubeConfig: KubeConfig;
  /** Watch one namespace; all namespaces when undefined. */
  namespace?: string;
  logger: ControllerLogger;
  workload: WorkloadConfig;
  /**
   * The internal CA (`ca.crt`, `ca.key` of `--internal-ca-dir`) that signs every Runtime's
   * runtimed certificate. Required: Runtime Pods cannot start without their TLS Secret, so
   * a controller-manager without a usable CA refuses to start instead of running half-way.
   */
  internalCa: CertificateAuthority;
  /** Finished Runs kept per Runtime by the completed-Run GC (newest first). */
  finishedRunsPerRuntime?: number;
  workers?: number;
  now?: () => number;
  /** Fed from the caches at scrape time while this manager runs (the /metrics endpoint). */
  metrics?: ManagerMetrics;
}

/**
 * The controller-manager's controllers over one set of shared informers:
 * - `runtime` (key `namespace/runtime`): the Runtime's TLS Secret (first), Deployment and Service, and its status;
 * - `run-ttl` (key `namespace/run`): deletes a finished Run `ttlSecondsAfterFinished` after it finished;
 * - `run-history` (key `namespace/runtime`): keeps the newest N finished Runs of each Runtime.
 * Every reconcile reads the caches and converges; none depends on the event that caused it.
 * Run this only while holding the leader Lease.
 */
export class ControllerManager {
  readonly #options: ControllerManagerOptions;
  readonly #custom: CustomObjectsApi;
  readonly #apps: AppsV1Api;
  readonly #core: CoreV1Api;
  readonly #runtimes: SharedInformer<RuntimeObject>;
  readonly #runs: SharedInformer<RunObject>;
  readonly #pods: SharedInformer<V1Pod>;
  readonly #deployments: SharedInformer<V1Deployment>;
  readonly #services: SharedInformer<V1Service>;
  readonly #secrets: SharedInformer<V1Secret>;
  readonly #controllers: Controller[];
  readonly #now: () => number;

  constructor(options: ControllerManagerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    // Fail fast with what is wrong with the configured CA (expired, not a CA, wrong key).
    validateCertificateAuthority(options.internalCa, new Date(this.#now()));
    // And with what runtimed would refuse, or publish as caBundle, in every Runtime Pod.
    const gateway = options.workload.gateway;
    if (gateway !== undefined) {
      validateGatewayHost(gateway.host, 'the gateway host');
      if (gateway.caPem !== undefined) validateGatewayCaPem(gateway.caPem, 'the gateway CA');
    }
    const { kubeConfig, namespace, logger } = options;
    this.#custom = kubeConfig.makeApiClient(CustomObjectsApi);
    this.#apps = kubeConfig.makeApiClient(AppsV1Api);
    this.#core = kubeConfig.makeApiClient(CoreV1Api);
    const custom = this.#custom;
    const apps = this.#apps;
    const core = this.#core;
    const prefix = namespace === undefined ? '' : `/namespaces/${namespace}`;
    const customList =
      <T extends KubernetesObject>(plural: string) =>
      (): Promise<KubernetesListObject<T>> =>
        (namespace === undefined
          ? custom.listClusterCustomObject({ group: API_GROUP, version: API_VERSION, plural })
          : custom.listNamespacedCustomObject({ group: API_GROUP, version: API_VERSION, namespace, plural })) as Promise<
          KubernetesListObject<T>
        >;
    const podSelector = `${LABELS.component}=${RUNTIME_COMPONENT},${LABELS.runtime}`;
    const ownedSelector = `${LABELS.managedBy}=${MANAGED_BY}`;
    this.#runtimes = new SharedInformer({
      name: 'runtimes',
      kubeConfig,
      path: `/apis/${API_GROUP}/${API_VERSION}${prefix}/${RUNTIME_PLURAL}`,
      list: customList<RuntimeObject>(RUNTIME_PLURAL),
      logger,
    });
    this.#runs = new SharedInformer({
      name: 'runs',
      kubeConfig,
      path: `/apis/${API_GROUP}/${API_VERSION}${prefix}/${RUN_PLURAL}`,
      list: customList<RunObject>(RUN_PLURAL),
      logger,
    });
    this.#pods = new SharedInformer({
      name: 'runtime-pods',
      kubeConfig,
      path: `/api/v1${prefix}/pods`,
      labelSelector: podSelector,
      list: () =>
        namespace === undefined
          ? core.listPodForAllNamespaces({ labelSelector: podSelector })
          : core.listNamespacedPod({ namespace, labelSelector: podSelector }),
      logger,
    });
    this.#deployments = new SharedInformer({
      name: 'deployments',
      kubeConfig,
      path: `/apis/apps/v1${prefix}/deployments`,
      labelSelector: ownedSelector,
      list: () =>
        namespace === undefined
          ? apps.listDeploymentForAllNamespaces({ labelSelector: ownedSelector })
          : apps.listNamespacedDeployment({ namespace, labelSelector: ownedSelector }),
      logger,
    });
    this.#services = new SharedInformer({
      name: 'services',
      kubeConfig,
      path: `/api/v1${prefix}/services`,
      labelSelector: ownedSelector,
      list: () =>
        namespace === undefined
          ? core.listServiceForAllNamespaces({ labelSelector: ownedSelector })
          : core.listNamespacedService({ namespace, labelSelector: ownedSelector }),
      logger,
    });
    // Only the Secrets this controller-manager made (managed-by label): never the namespace's others.
    this.#secrets = new SharedInformer({
      name: 'secrets',
      kubeConfig,
      path: `/api/v1${prefix}/secrets`,
      labelSelector: ownedSelector,
      list: () =>
        namespace === undefined
          ? core.listSecretForAllNamespaces({ labelSelector: ownedSelector })
          : core.listNamespacedSecret({ namespace, labelSelector: ownedSelector }),
      logger,
    });

    const workers = options.workers ?? 2;
    const runtimeController = new Controller({ name: 'runtime', logger, workers, reconcile: (key) => this.reconcileRuntime(key) });
    const ttlController = new Controller({ name: 'run-ttl', logger, workers, reconcile: (key) => this.reconcileTtl(key) });
    const historyController = new Controller({ name: 'run-history', logger, workers: 1, reconcile: (key) => this.reconcileHistory(key) });
    this.#controllers = [runtimeController, ttlController, historyController];

    const runtimeOfRun = (run: ReadonlyDeep<RunObject>): string => `${run.metadata.namespace ?? ''}/${run.spec.runtime}`;
    this.#runtimes.enqueueTo((key) => {
      runtimeController.enqueue(key);
    });
    this.#runs.enqueueTo((key) => {
      runtimeController.enqueue(key);
    }, runtimeOfRun);
    this.#runs.enqueueTo((key) => {
      historyController.enqueue(key);
    }, runtimeOfRun);
    this.#runs.enqueueTo((key) => {
      ttlController.enqueue(key);
    });
    this.#pods.enqueueTo(
      (key) => {
        runtimeController.enqueue(key);
      },
      (pod) => {
        const runtime = pod.metadata?.labels?.[LABELS.runtime];
        return runtime === undefined ? undefined : `${pod.metadata?.namespace ?? ''}/${runtime}`;
      },
    );
    const ownerKey = (object: ReadonlyDeep<V1Deployment> | ReadonlyDeep<V1Service> | ReadonlyDeep<V1Secret>): string | undefined => {
      const owner = object.metadata?.ownerReferences?.find(
        (ref) => ref.controller === true && ref.kind === RUNTIME_KIND && ref.apiVersion === `${API_GROUP}/${API_VERSION}`,
      );
      return owner === undefined ? undefined : `${object.metadata?.namespace ?? ''}/${owner.name}`;
    };
    this.#deployments.enqueueTo((key) => {
      runtimeController.enqueue(key);
    }, ownerKey);
    this.#services.enqueueTo((key) => {
      runtimeController.enqueue(key);
    }, ownerKey);
    this.#secrets.enqueueTo((key) => {
      runtimeController.enqueue(key);
    }, ownerKey);
  }

  async start(): Promise<void> {
    await Promise.all(this.#informers().map((informer) => informer.start()));
    for (const controller of this.#controllers) controller.start();
    this.#options.metrics?.observe(() => this.metricsSnapshot());
  }

  async stop(): Promise<void> {
    this.#options.metrics?.observe(undefined);
    await Promise.all(this.#controllers.map((controller) => controller.stop()));
    await Promise.all(this.#informers().map((informer) => informer.stop()));
  }

  /** What the metrics need, read from the caches only. */
  metricsSnapshot(): ManagerMetricsSnapshot {
    return {
      runtimes: this.#runtimes.list().map((runtime) => ({
        namespace: runtime.metadata.namespace ?? '',
        name: runtime.metadata.name ?? '',
        runsPerPod: runtime.spec.runs,
      })),
      runs: this.#runs.list().map((run) => ({
        namespace: run.metadata.namespace ?? '',
        runtime: run.spec.runtime,
        phase: phaseOf(run),
        cleanupPending: cleanupPending(run),
      })),
      pods: this.#pods.list().flatMap((pod) => {
        const runtime = pod.metadata?.labels?.[LABELS.runtime];
        return runtime === undefined
          ? []
          : [
              {
                namespace: pod.metadata?.namespace ?? '',
                runtime,
                ready: isPodReady(pod),
                deleting: pod.metadata?.deletionTimestamp !== undefined,
                capacity: podCapacity(pod),
              },
            ];
      }),
    };
  }

  #informers(): { start(): Promise<void>; stop(): Promise<void> }[] {
    return [this.#runtimes, this.#runs, this.#pods, this.#deployments, this.#services, this.#secrets];
  }

  // ------------------------------------------------------------------ Runtime

  async reconcileRuntime(key: string): Promise<ReconcileResult | undefined> {
    const { namespace = '', name } = splitObjectKey(key);
    const cached = this.#runtimes.get(name, namespace);
    // Gone: its Deployment and Service go with it through their owner references.
    if (cached === undefined || cached.metadata.deletionTimestamp !== undefined) return undefined;
    const runtime = structuredClone(cached) as unknown as Runtime;

    const problems = workloadProblems(runtime);
    let rollout: RolloutView | undefined;
    let requeueAfterMs: number | undefined;
    if (problems.length === 0) {
      // The TLS Secret first: the Pods mount it and cannot start without it.
      const tls = await this.#ensureTlsSecret(runtime);
      requeueAfterMs = tls.recheckAfterMs;
      if (tls.conflict !== undefined) problems.push(tls.conflict);
    }
    if (problems.length === 0) {
      const desired = runtimeWorkload(runtime, this.#options.workload);
      const deployment = await this.#ensureDeployment(runtime, desired.deployment);
      const service = await this.#ensureService(runtime, desired.service);
      if (deployment.conflict !== undefined) problems.push(deployment.conflict);
      if (service.conflict !== undefined) problems.push(service.conflict);
      rollout = deployment.rollout;
    }

    const pods = this.#pods.list(namespace).filter((pod) => pod.metadata?.labels?.[LABELS.runtime] === name);
    const runsHoldingCapacity = this.#runs
      .list(namespace)
      .filter((run) => run.spec.runtime === name && holdsCapacity(phaseOf(run), cleanupPending(run))).length;
    const status = runtimeStatus({
      generation: runtime.metadata.generation,
      runsPerPod: runtime.spec.runs,
      previous: runtime.status,
      pods: pods.map((pod) => ({
        ready: isPodReady(pod),
        deleting: pod.metadata?.deletionTimestamp !== undefined,
        capacity: podCapacity(pod),
      })),
      runsHoldingCapacity,
      rollout,
      problems,
      now: rfc3339(this.#now()),
    });
    if (!sameStatus(runtime.status, status)) await this.#writeRuntimeStatus(runtime, status);
    // Back at the certificate's renewal point (bounded), even if nothing else happens.
    return requeueAfterMs === undefined ? undefined : { requeueAfterMs };
  }

  /**
   * Keeps `<runtime>-runtimed-tls`: created with a fresh certificate when missing, reissued
   * when tlsSecretDecision says so (renewal due, CA changed, broken contents), left alone
   * otherwise, so that a resync never rewrites it. Writes are fenced like the Deployment's.
   */
  async #ensureTlsSecret(runtime: Runtime): Promise<{ recheckAfterMs?: number; conflict?: string }> {
    const name = runtimedTlsSecretName(runtime.metadata.name ?? '');
    const namespace = runtime.metadata.namespace ?? '';
    const existing = this.#secrets.get(name, namespace);
    if (existing !== undefined && !controlledBy(existing, runtime)) return { conflict: notOwned('Secret', namespace, name) };
    const ca = this.#options.internalCa;
    const now = this.#now();
    if (existing !== undefined) {
      const data = decodeSecretData(existing.data);
      const gatewayCaPem = this.#options.workload.gateway?.caPem;
      const decision = tlsSecretDecision({ data, caPem: ca.certPem, gatewayCaPem, namespace, runtime: runtime.metadata.name ?? '', now });
      if (decision.action === 'keep') return { recheckAfterMs: decision.recheckAfterMs };
      if (existing.type !== 'kubernetes.io/tls')
        return {
          conflict: `Secret ${namespace}/${name} has type ${existing.type ?? ''}, not kubernetes.io/tls; delete it to have it recreated`,
        };
      // Only the gateway CA differs: the certificate stays (the decision checked it is sound).
      const desired =
        decision.action === 'update-gateway-ca' && data !== undefined
          ? runtimedTlsSecret(runtime, {
              caPem: ca.certPem,
              certPem: data[TLS_SECRET_KEYS.cert] ?? '',
              keyPem: data[TLS_SECRET_KEYS.key] ?? '',
              gatewayCaPem,
            })
          : await this.#tlsSecret(runtime, now);
      await staleIsFine(
        this.#options.logger,
        `Secret ${namespace}/${name}`,
        this.#core.replaceNamespacedSecret({
          namespace,
          name,
          body: asClientSecret({
            ...desired,
            metadata: { ...desired.metadata, resourceVersion: existing.metadata?.resourceVersion ?? '' },
          }),
        }),
      );
      this.#options.logger.debug(
        { runtime: `${namespace}/${runtime.metadata.name ?? ''}`, reason: decision.reason },
        decision.action === 'update-gateway-ca' ? 'rewrote the gateway CA of the runtimed TLS Secret' : 'reissued the runtimed certificate',
      );
      // Its watch event brings the new Secret back, and the decision sets the next recheck.
      return {};
    }
    const desired = await this.#tlsSecret(runtime, now);
    try {
      await this.#core.createNamespacedSecret({ namespace, body: asClientSecret(desired) });
    } catch (error) {
      // As for the Deployment: a 409 is our own create not yet cached, or someone else's Secret.
      if (error instanceof ApiException && error.code === 409) {
        const current = await this.#core.readNamespacedSecret({ namespace, name });
        return controlledBy(current, runtime) ? {} : { conflict: notOwned('Secret', namespace, name) };
      }
      throw error;
    }
    this.#options.logger.debug({ runtime: `${namespace}/${runtime.metadata.name ?? ''}` }, 'issued the runtimed certificate');
    return {};
  }

  async #tlsSecret(runtime: Runtime, now: number): Promise<Secret> {
    const ca = this.#options.internalCa;
    const issued = await issueWorkloadCertificate(ca, {
      namespace: runtime.metadata.namespace ?? '',
      runtime: runtime.metadata.name ?? '',
      now: new Date(now),
    });
    return runtimedTlsSecret(runtime, {
      caPem: ca.certPem,
      certPem: issued.certPem,
      keyPem: issued.keyPem,
      gatewayCaPem: this.#options.workload.gateway?.caPem,
    });
  }

  async #ensureDeployment(runtime: Runtime, desired: Deployment): Promise<{ rollout?: RolloutView; conflict?: string }> {
    const { namespace, name } = desired.metadata;
    const existing = this.#deployments.get(name, namespace);
    if (existing === undefined) {
      try {
        await this.#apps.createNamespacedDeployment({ namespace, body: asClientDeployment(desired) });
      } catch (error) {
        // 409 with nothing in the cache: either the cache has not seen our own create
        // yet, or the name is taken by an object we do not manage. Only a read tells.
        if (error instanceof ApiException && error.code === 409) {
          const current = await this.#apps.readNamespacedDeployment({ namespace, name });
          return controlledBy(current, runtime) ? {} : { conflict: notOwned('Deployment', namespace, name) };
        }
        throw error;
      }
      return {};
    }
    if (!controlledBy(existing, runtime)) return { conflict: notOwned('Deployment', namespace, name) };
    if (existing.metadata?.annotations?.[SPEC_HASH_ANNOTATION] !== desired.metadata.annotations?.[SPEC_HASH_ANNOTATION]) {
      // A changed template rolls the Pods (the Deployment's RollingUpdate); the write is
      // fenced on the cached resourceVersion, and a 409 retries from a fresh cache.
      await staleIsFine(
        this.#options.logger,
        `Deployment ${namespace}/${name}`,
        this.#apps.replaceNamespacedDeployment({
          namespace,
          name,
          body: asClientDeployment({
            ...desired,
            metadata: { ...desired.metadata, resourceVersion: existing.metadata?.resourceVersion ?? '' },
          }),
        }),
      );
    }
    return {
      rollout: {
        generation: existing.metadata?.generation ?? 0,
        observedGeneration: existing.status?.observedGeneration ?? 0,
        replicas: existing.status?.replicas ?? 0,
        updatedReplicas: existing.status?.updatedReplicas ?? 0,
        availableReplicas: existing.status?.availableReplicas ?? 0,
        desiredReplicas: desired.spec.replicas,
      },
    };
  }

  async #ensureService(runtime: Runtime, desired: Service): Promise<{ conflict?: string }> {
    const { namespace, name } = desired.metadata;
    const existing = this.#services.get(name, namespace);
    if (existing === undefined) {
      try {
        await this.#core.createNamespacedService({ namespace, body: asClientService(desired) });
      } catch (error) {
        if (error instanceof ApiException && error.code === 409) {
          const current = await this.#core.readNamespacedService({ namespace, name });
          return controlledBy(current, runtime) ? {} : { conflict: notOwned('Service', namespace, name) };
        }
        throw error;
      }
      return {};
    }
    if (!controlledBy(existing, runtime)) return { conflict: notOwned('Service', namespace, name) };
    if (existing.metadata?.annotations?.[SPEC_HASH_ANNOTATION] !== desired.metadata.annotations?.[SPEC_HASH_ANNOTATION]) {
      await staleIsFine(
        this.#options.logger,
        `Service ${namespace}/${name}`,
        this.#core.replaceNamespacedService({
          namespace,
          name,
          body: asClientService({
            ...desired,
            metadata: { ...desired.metadata, resourceVersion: existing.metadata?.resourceVersion ?? '' },
            // clusterIP(s) and IP families are immutable and allocated by the API server: keep them.
            spec: { ...structuredClone(existing.spec), ...desired.spec },
          }),
        }),
      );
    }
    return {};
  }

  async #writeRuntimeStatus(runtime: Runtime, status: RuntimeStatus): Promise<void> {
    const { name = '', namespace = '', uid, resourceVersion } = runtime.metadata;
    await staleIsFine(
      this.#options.logger,
      `Runtime ${namespace}/${name} status`,
      this.#replaceRuntimeStatus({
        group: API_GROUP,
        version: API_VERSION,
        namespace,
        plural: RUNTIME_PLURAL,
        name,
        body: {
          apiVersion: runtime.apiVersion,
          kind: runtime.kind,
          metadata: { name, namespace, uid, resourceVersion },
          spec: runtime.spec,
          status,
        },
      }),
    );
  }

  /**
   * A Runtime deleted since the cache read answers 404: there is no status left to keep, and
   * its delete event is on the way (the garbage collector deleting its objects enqueues it
   * meanwhile, so this is common right after a deletion, not an error).
   */
  async #replaceRuntimeStatus(request: Parameters<CustomObjectsApi['replaceNamespacedCustomObjectStatus']>[0]): Promise<void> {
    try {
      await this.#custom.replaceNamespacedCustomObjectStatus(request);
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) {
        this.#options.logger.debug({ runtime: `${request.namespace}/${request.name}` }, 'Runtime gone before its status write');
        return;
      }
      throw error;
    }
  }

  // ------------------------------------------------------------------ finished Runs

  async reconcileTtl(key: string): Promise<ReconcileResult | undefined> {
    const { namespace = '', name } = splitObjectKey(key);
    const run = this.#runs.get(name, namespace);
    if (run === undefined) return undefined;
    const view = collectable(run);
    const decision = ttlDecision(view, this.#now());
    switch (decision.action) {
      case 'keep':
        return undefined;
      case 'wait':
        return { requeueAfterMs: decision.afterMs };
      case 'delete':
        await this.#deleteRun(namespace, view);
        return undefined;
    }
  }

  async reconcileHistory(key: string): Promise<ReconcileResult | undefined> {
    const { namespace = '', name } = splitObjectKey(key);
    const runs = this.#runs
      .list(namespace)
      .filter((run) => run.spec.runtime === name)
      .map(collectable);
    const doomed = historyToCollect(runs, this.#options.finishedRunsPerRuntime ?? DEFAULT_FINISHED_RUNS_PER_RUNTIME);
    for (const run of doomed) await this.#deleteRun(namespace, run);
    return undefined;
  }

  /**
   * Deletes a Run preconditioned on the UID and resourceVersion the decision was made
   * from: a Run that changed since (recreated under the same name, or any write at all)
   * is not deleted, and its watch event brings it back for a new decision. Delete options
   * go in the body; the API server ignores query options when a body is sent.
   */
  async #deleteRun(namespace: string, run: CollectableRun): Promise<void> {
    try {
      await this.#custom.deleteNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace,
        plural: RUN_PLURAL,
        name: run.name,
        body: { preconditions: { uid: run.uid, resourceVersion: run.resourceVersion }, propagationPolicy: 'Background' },
      });
      this.#options.logger.debug({ run: `${namespace}/${run.name}`, phase: run.phase }, 'deleted finished Run');
    } catch (error) {
      if (error instanceof ApiException && (error.code === 404 || error.code === 409)) return;
      throw error;
    }
  }
}

/**
 * A fenced write refused with 409 was decided from a cache older than the server: the
 * newer version's watch event is on its way and enqueues the same key, which then
 * decides again from fresh data. Requeueing with backoff (and logging an error) here
 * would only add a second, slower retry of the same thing.
 */
async function staleIsFine(logger: ControllerLogger, what: string, write: Promise<unknown>): Promise<void> {
  try {
    await write;
  } catch (error) {
    if (error instanceof ApiException && error.code === 409) {
      logger.debug({ object: what }, 'write fenced out by a newer version; its watch event will reconcile again');
      return;
    }
    throw error;
  }
}

function phaseOf(run: ReadonlyDeep<RunObject>): RunPhase {
  return currentPhase({ status: run.status?.phase === undefined ? {} : { phase: run.status.phase } });
}

function cleanupPending(run: ReadonlyDeep<RunObject>): boolean {
  return run.metadata.finalizers?.includes(REGISTRATION_CLEANUP_FINALIZER) === true;
}

function collectable(run: ReadonlyDeep<RunObject>): CollectableRun {
  // Custom objects are parsed JSON: timestamps are strings, whatever V1ObjectMeta says.
  const meta = run.metadata as unknown as Run['metadata'];
  return {
    name: meta.name ?? '',
    uid: meta.uid ?? '',
    resourceVersion: meta.resourceVersion ?? '',
    phase: phaseOf(run),
    creationTimestamp: meta.creationTimestamp ?? '',
    completionTime: run.status?.completionTime,
    ttlSecondsAfterFinished: run.spec.ttlSecondsAfterFinished,
    deleting: meta.deletionTimestamp !== undefined,
  };
}

function controlledBy(object: ReadonlyDeep<KubernetesObject>, runtime: Runtime): boolean {
  return object.metadata?.ownerReferences?.some((ref) => ref.controller === true && ref.uid === runtime.metadata.uid) === true;
}

function notOwned(kind: string, namespace: string, name: string): string {
  return `${kind} ${namespace}/${name} exists and is not controlled by this Runtime; rename the Runtime or remove the ${kind}`;
}

/**
 * The workload lib builds plain data with string timestamps (it may not import
 * client-node); the typed APIs serialise plain data field by field, which is all this
 * conversion claims.
 */
function asClientDeployment(object: Deployment): V1Deployment {
  return object as unknown as V1Deployment;
}

function asClientService(object: Service): V1Service {
  return object as unknown as V1Service;
}

function asClientSecret(object: Secret): V1Secret {
  return object as unknown as V1Secret;
}

export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
