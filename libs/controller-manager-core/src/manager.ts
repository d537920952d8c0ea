import { CoreV1Api, KubernetesObjectApi } from '@kubernetes/client-node';
import type { KubeConfig, V1Deployment, V1Pod, V1PodDisruptionBudget, V1Secret, V1Service } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, ARTIFACT_STORE_PLURAL, LABELS, RUN_INPUT_PLURAL, RUN_PLURAL, RUNTIME_PLURAL } from '@kruntimes/api';
import { Controller, InformerFactory, PooledKubeConfig, objectKey } from '@kruntimes/controller-runtime';
import type { ControllerLogger } from '@kruntimes/controller-runtime';
import { kruntimesClients } from '@kruntimes/run-client';
import { isWaitingForInput } from '@kruntimes/run-state';
import { MANAGED_BY, RUNTIME_COMPONENT } from '@kruntimes/runtime-workload';
import type { WorkloadConfig } from '@kruntimes/runtime-workload';
import { validateCertificateAuthority } from '@kruntimes/workload-pki';
import type { CertificateAuthority } from '@kruntimes/workload-pki';
import { ArtifactStoreReconciler } from './artifact-store-reconciler.ts';
import { Autoscaler } from './autoscaler.ts';
import type { ArtifactStoreObject } from './artifact-store-reconciler.ts';
import {
  MANAGER_RUN_PROJECTION,
  addRunIndexes,
  metricsSnapshot,
  phaseOf,
  runtimeKeyOfOwned,
  runtimeKeyOfPod,
  runtimeKeyOfRun,
} from './caches.ts';
import type { ManagerCaches, RunObject, RuntimeObject } from './caches.ts';
import { validateGatewayCaPem, validateGatewayHost } from './gateway-endpoint.ts';
import type { InputMetrics } from './input-metrics.ts';
import type { ManagerMetrics, ManagerMetricsSnapshot } from './metrics.ts';
import { DEFAULT_FINISHED_RUNS_PER_RUNTIME, RunCollector } from './run-collector.ts';
import { RunInputReconciler } from './run-input-reconciler.ts';
import type { RunInputObject } from './run-input-reconciler.ts';
import { PoolDecisions } from './pool-decisions.ts';
import { RuntimeReconciler } from './runtime-reconciler.ts';

export { DEFAULT_FINISHED_RUNS_PER_RUNTIME } from './run-collector.ts';
export { DEFAULT_ARTIFACT_CLEANUP_INTERVAL_MS } from './artifact-store-reconciler.ts';
export { rfc3339 } from './runtime-status-writer.ts';

const RUNTIME_POD_SELECTOR = `${LABELS.component}=${RUNTIME_COMPONENT},${LABELS.runtime}`;
const OWNED_SELECTOR = `${LABELS.managedBy}=${MANAGED_BY}`;

export interface ControllerManagerOptions {
  kubeConfig: KubeConfig;
  /** The Manager's shared informers, which it starts first and stops last; default: this one's own, started and stopped with it. */
  informers?: InformerFactory;
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
  /** Time between two retention passes over one ArtifactStore. Default 5 min. */
  artifactCleanupIntervalMs?: number;
  /** See ArtifactStoreReconcilerOptions.unknownRunGraceMs (tests set 0). */
  artifactUnknownRunGraceMs?: number;
  workers?: number;
  now?: () => number;
  /** Fed from the caches at scrape time while this manager runs (the /metrics endpoint). */
  metrics?: ManagerMetrics;
  /** The RunInput controller's counters (served on the same /metrics). */
  inputMetrics?: InputMetrics;
}

/**
 * The controller-manager's controllers over one set of shared informers:
 * - `runtime` (key `namespace/runtime`): the Runtime's TLS Secret (first), Deployment, Service and
 *   PodDisruptionBudget, and its status (RuntimeReconciler), with the autoscaler's decision in it;
 * - `autoscaler` (key `namespace/runtime`): spec.replicas of a Runtime with spec.scaling, and its Pods' scale-down
 *   marks and deletion costs (Autoscaler);
 * - `run-ttl` (key `namespace/run`) and `run-history` (key `namespace/runtime`): finished-Run collection (RunCollector);
 * - `artifact-store` (key `namespace/artifactstore`): artifact retention and the store's Ready condition (ArtifactStoreReconciler);
 * - `run-input` (key `namespace/runinput`) and `waiting-input` (key `namespace/run`, WaitingInput Runs only): responses to Runs
 *   waiting for input, and the timeout and cancel of a waiting Run (RunInputReconciler).
 * Every reconcile reads the caches and converges; none depends on the event that caused it.
 * Run this only while holding the leader Lease.
 */
export class ControllerManager {
  readonly #metrics: ManagerMetrics | undefined;
  readonly #informers: InformerFactory;
  readonly #ownsInformers: boolean;
  readonly #caches: ManagerCaches;
  readonly #controllers: Controller[];

  constructor(options: ControllerManagerOptions) {
    const now = options.now ?? Date.now;
    validateConfiguration(options, now());
    const { namespace, logger } = options;
    // One connection pool for every request of the manager (see PooledKubeConfig).
    const kubeConfig = PooledKubeConfig.from(options.kubeConfig);
    this.#metrics = options.metrics;
    this.#ownsInformers = options.informers === undefined;
    this.#informers = options.informers ?? new InformerFactory({ kubeConfig, logger });
    const kruntimes = { group: API_GROUP, version: API_VERSION, namespace };
    const core = { group: '', version: 'v1', namespace };
    const owned = { labelSelector: OWNED_SELECTOR };
    const caches: ManagerCaches = {
      runtimes: this.#informers.informer<RuntimeObject>({ ...kruntimes, plural: RUNTIME_PLURAL }),
      runs: this.#informers.informer<RunObject>({ ...kruntimes, plural: RUN_PLURAL, projection: MANAGER_RUN_PROJECTION }),
      pods: this.#informers.informer<V1Pod>({ ...core, plural: 'pods', labelSelector: RUNTIME_POD_SELECTOR, name: 'runtime-pods' }),
      deployments: this.#informers.informer<V1Deployment>({ ...core, group: 'apps', plural: 'deployments', ...owned }),
      services: this.#informers.informer<V1Service>({ ...core, plural: 'services', ...owned }),
      disruptionBudgets: this.#informers.informer<V1PodDisruptionBudget>({
        ...core,
        group: 'policy',
        plural: 'poddisruptionbudgets',
        ...owned,
      }),
      secrets: this.#informers.informer<V1Secret>({ ...core, plural: 'secrets', ...owned }),
      artifactStores: this.#informers.informer<ArtifactStoreObject>({ ...kruntimes, plural: ARTIFACT_STORE_PLURAL }),
      runInputs: this.#informers.informer<RunInputObject>({ ...kruntimes, plural: RUN_INPUT_PLURAL }),
    };
    addRunIndexes(caches.runs);
    this.#caches = caches;

    const clients = kruntimesClients(kubeConfig);
    const objects = KubernetesObjectApi.makeApiClient(kubeConfig);
    const { workload, internalCa } = options;
    const pools = new PoolDecisions();
    const runtimes = new RuntimeReconciler({ caches, objects, runtimes: clients.runtimes, logger, workload, internalCa, pools, now });
    const runtimeStatusDue = (key: string): void => {
      controllers.runtime.enqueue(key);
    };
    const autoscaler = new Autoscaler({
      caches,
      runtimes: clients.runtimes,
      core: kubeConfig.makeApiClient(CoreV1Api),
      decisions: pools,
      logger,
      now,
      onDecision: runtimeStatusDue,
    });
    const finishedRunsPerRuntime = options.finishedRunsPerRuntime ?? DEFAULT_FINISHED_RUNS_PER_RUNTIME;
    const collector = new RunCollector({ caches, runs: clients.runs, logger, finishedRunsPerRuntime, now });
    const artifactStores = new ArtifactStoreReconciler({
      caches,
      core: kubeConfig.makeApiClient(CoreV1Api),
      artifactStores: clients.artifactStores,
      logger,
      now,
      ...(options.artifactCleanupIntervalMs === undefined ? {} : { cleanupIntervalMs: options.artifactCleanupIntervalMs }),
      ...(options.artifactUnknownRunGraceMs === undefined ? {} : { unknownRunGraceMs: options.artifactUnknownRunGraceMs }),
    });
    const inputs = new RunInputReconciler({
      caches,
      clients,
      core: kubeConfig.makeApiClient(CoreV1Api),
      logger,
      now,
      ...(options.inputMetrics === undefined ? {} : { metrics: options.inputMetrics }),
    });
    const workers = options.workers ?? 2;
    const controllers = {
      runtime: new Controller({ name: 'runtime', logger, workers, reconcile: (key) => runtimes.reconcile(key) }),
      autoscaler: new Controller({ name: 'autoscaler', logger, workers, reconcile: (key) => autoscaler.reconcile(key) }),
      ttl: new Controller({ name: 'run-ttl', logger, workers, reconcile: (key) => collector.reconcileTtl(key) }),
      history: new Controller({ name: 'run-history', logger, workers: 1, reconcile: (key) => collector.reconcileHistory(key) }),
      artifactStore: new Controller({ name: 'artifact-store', logger, workers: 1, reconcile: (key) => artifactStores.reconcile(key) }),
      runInput: new Controller({ name: 'run-input', logger, workers, reconcile: (key) => inputs.reconcileInput(key) }),
      waitingInput: new Controller({ name: 'waiting-input', logger, workers, reconcile: (key) => inputs.reconcileWaitingRun(key) }),
    };
    this.#controllers = Object.values(controllers);
    enqueueOnChange(caches, controllers);
  }

  /** Fills the caches (shared ones are synced already), then starts the controllers. */
  async start(): Promise<void> {
    await this.#informers.start();
    for (const controller of this.#controllers) controller.start();
    this.#metrics?.observe(() => this.metricsSnapshot());
  }

  async stop(): Promise<void> {
    this.#metrics?.observe(undefined);
    await Promise.all(this.#controllers.map((controller) => controller.stop()));
    if (this.#ownsInformers) await this.#informers.stop();
  }

  /** What the metrics need, read from the caches only. */
  metricsSnapshot(): ManagerMetricsSnapshot {
    return metricsSnapshot(this.#caches);
  }
}

/** Which keys each change enqueues: Runs and Runtime Pods name their Runtime, owned objects their controller. */
function enqueueOnChange(
  caches: ManagerCaches,
  controllers: Record<'runtime' | 'autoscaler' | 'ttl' | 'history' | 'artifactStore' | 'runInput' | 'waitingInput', Controller>,
): void {
  const to = (controller: Controller) => (key: string) => {
    controller.enqueue(key);
  };
  const { runtime, autoscaler, ttl, history, artifactStore, runInput, waitingInput } = controllers;
  // Periodic passes (requeueAfterMs), not Run events: runtimed removes a succeeded Run's other attempts itself.
  caches.artifactStores.enqueueTo(to(artifactStore));
  caches.runtimes.enqueueTo(to(runtime));
  caches.runs.enqueueTo(to(runtime), runtimeKeyOfRun);
  caches.runs.enqueueTo(to(history), runtimeKeyOfRun);
  caches.runs.enqueueTo(to(ttl));
  // Only a waiting Run has anything to end here; a response is decided on its own RunInput's events.
  caches.runs.enqueueTo(to(waitingInput), (run) => (isWaitingForInput(phaseOf(run)) ? objectKey(run) : undefined));
  caches.runInputs.enqueueTo(to(runInput));
  caches.pods.enqueueTo(to(runtime), runtimeKeyOfPod);
  // The pool's size follows its Runtime, its Runs' demand and its Pods.
  caches.runtimes.enqueueTo(to(autoscaler));
  caches.runs.enqueueTo(to(autoscaler), runtimeKeyOfRun);
  caches.pods.enqueueTo(to(autoscaler), runtimeKeyOfPod);
  for (const owned of [caches.deployments, caches.services, caches.disruptionBudgets, caches.secrets]) {
    owned.enqueueTo(to(runtime), runtimeKeyOfOwned);
  }
}

/** Fails fast with what is wrong with the configured CA (expired, not a CA, wrong key), and with what runtimed would refuse, or publish as caBundle, in every Runtime Pod. */
function validateConfiguration(options: Pick<ControllerManagerOptions, 'internalCa' | 'workload'>, now: number): void {
  validateCertificateAuthority(options.internalCa, new Date(now));
  const gateway = options.workload.gateway;
  if (gateway !== undefined) {
    validateGatewayHost(gateway.host, 'the gateway host');
    if (gateway.caPem !== undefined) validateGatewayCaPem(gateway.caPem, 'the gateway CA');
  }
}
