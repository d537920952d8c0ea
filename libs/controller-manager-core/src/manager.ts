import { CoreV1Api, KubernetesObjectApi } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { LABELS } from '@kruntimes/api';
import { Controller, ControllerGroup, EventRecorder, PooledKubeConfig, asReconciler, objectKey } from '@kruntimes/controller-runtime';
import type { ControllerLogger, InformerFactory } from '@kruntimes/controller-runtime';
import { kruntimesClients } from '@kruntimes/run-client';
import { isWaitingForInput } from '@kruntimes/run-state';
import { MANAGED_BY, RUNTIME_COMPONENT } from '@kruntimes/runtime-workload';
import type { WorkloadConfig } from '@kruntimes/runtime-workload';
import { validateCertificateAuthority } from '@kruntimes/workload-pki';
import type { CertificateAuthority } from '@kruntimes/workload-pki';
import { ArtifactStoreReconciler } from './artifact-store-reconciler.ts';
import { Autoscaler } from './autoscaler.ts';
import {
  MANAGER_RUN_PROJECTION,
  addRunIndexes,
  metricsSnapshot,
  phaseOf,
  runtimeKeyOfOwned,
  runtimeKeyOfPod,
  runtimeKeyOfRun,
} from './caches.ts';
import type { ManagerCaches } from './caches.ts';
import { validateGatewayCaPem, validateGatewayHost } from './gateway-endpoint.ts';
import type { InputMetrics } from './input-metrics.ts';
import type { ManagerMetrics, ManagerMetricsSnapshot } from './metrics.ts';
import { DEFAULT_FINISHED_RUNS_PER_RUNTIME, RunCollector } from './run-collector.ts';
import { RunInputReconciler } from './run-input-reconciler.ts';
import { PoolDecisions } from './pool-decisions.ts';
import { RuntimeReconciler } from './runtime-reconciler.ts';

export { DEFAULT_FINISHED_RUNS_PER_RUNTIME } from './run-collector.ts';
export { DEFAULT_ARTIFACT_CLEANUP_INTERVAL_MS } from './artifact-store-reconciler.ts';

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
  readonly #group: ControllerGroup;
  readonly #caches: ManagerCaches;

  constructor(options: ControllerManagerOptions) {
    const now = options.now ?? Date.now;
    validateConfiguration(options, now());
    const { logger } = options;
    // One connection pool for every request of the manager (see PooledKubeConfig).
    const kubeConfig = PooledKubeConfig.from(options.kubeConfig);
    this.#metrics = options.metrics;
    this.#group = new ControllerGroup({ kubeConfig, logger, informers: options.informers });
    this.#caches = managerCaches(this.#group.informers, options.namespace);
    const controllers = managerControllers(this.#caches, { ...options, kubeConfig, now });
    this.#group.add(...Object.values(controllers));
    enqueueOnChange(this.#caches, controllers);
  }

  /** Fills the caches (shared ones are synced already), then starts the controllers. */
  async start(): Promise<void> {
    await this.#group.start();
    this.#metrics?.observe(() => this.metricsSnapshot());
  }

  async stop(): Promise<void> {
    this.#metrics?.observe(undefined);
    await this.#group.stop();
  }

  /** What the metrics need, read from the caches only. */
  metricsSnapshot(): ManagerMetricsSnapshot {
    return metricsSnapshot(this.#caches);
  }
}

type ControllerName = 'runtime' | 'autoscaler' | 'ttl' | 'history' | 'artifactStore' | 'runInput' | 'waitingInput';

/** The caches of every controller of the manager, with the Run cache's indexes, before they start. */
function managerCaches(informers: InformerFactory, namespace: string | undefined): ManagerCaches {
  const owned = { namespace, labelSelector: OWNED_SELECTOR };
  const caches: ManagerCaches = {
    runtimes: informers.runtimes({ namespace }),
    runs: informers.runs({ namespace, projection: MANAGER_RUN_PROJECTION }),
    pods: informers.pods({ namespace, labelSelector: RUNTIME_POD_SELECTOR, name: 'runtime-pods' }),
    deployments: informers.deployments(owned),
    services: informers.services(owned),
    disruptionBudgets: informers.podDisruptionBudgets(owned),
    secrets: informers.secrets(owned),
    artifactStores: informers.artifactStores({ namespace }),
    runInputs: informers.runInputs({ namespace }),
  };
  addRunIndexes(caches.runs);
  return caches;
}

/** The manager's controllers, each over its reconciler (see ControllerManager). */
function managerControllers(
  caches: ManagerCaches,
  options: ControllerManagerOptions & { now: () => number },
): Record<ControllerName, Controller> {
  const { kubeConfig, logger, now } = options;
  const clients = kruntimesClients(kubeConfig);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const events = new EventRecorder({ core, component: 'kruntimes-controller-manager', logger, now });
  const pools = new PoolDecisions();
  const { workload, internalCa } = options;
  const objects = KubernetesObjectApi.makeApiClient(kubeConfig);
  const runtimes = new RuntimeReconciler({ caches, objects, runtimes: clients.runtimes, logger, workload, internalCa, pools, now });
  const onDecision = (key: string): void => {
    controllers.runtime.enqueue(key);
  };
  const autoscaler = new Autoscaler({ caches, runtimes: clients.runtimes, core, events, decisions: pools, logger, now, onDecision });
  const finishedRunsPerRuntime = options.finishedRunsPerRuntime ?? DEFAULT_FINISHED_RUNS_PER_RUNTIME;
  const collector = new RunCollector({ caches, runs: clients.runs, logger, finishedRunsPerRuntime, now });
  const artifactStores = new ArtifactStoreReconciler({
    caches,
    core,
    artifactStores: clients.artifactStores,
    logger,
    now,
    ...(options.artifactCleanupIntervalMs === undefined ? {} : { cleanupIntervalMs: options.artifactCleanupIntervalMs }),
    ...(options.artifactUnknownRunGraceMs === undefined ? {} : { unknownRunGraceMs: options.artifactUnknownRunGraceMs }),
  });
  const metrics = options.inputMetrics === undefined ? {} : { metrics: options.inputMetrics };
  const inputs = new RunInputReconciler({ clients, events, logger, now, ...metrics });
  const workers = options.workers ?? 2;
  const controllers: Record<ControllerName, Controller> = {
    runtime: new Controller({ name: 'runtime', logger, workers, reconcile: asReconciler(caches.runtimes, runtimes) }),
    autoscaler: new Controller({ name: 'autoscaler', logger, workers, reconcile: asReconciler(caches.runtimes, autoscaler) }),
    ttl: new Controller({ name: 'run-ttl', logger, workers, reconcile: asReconciler(caches.runs, collector.ttl) }),
    history: new Controller({ name: 'run-history', logger, workers: 1, reconcile: (key) => collector.reconcileHistory(key) }),
    artifactStore: new Controller({
      name: 'artifact-store',
      logger,
      workers: 1,
      reconcile: asReconciler(caches.artifactStores, artifactStores),
    }),
    runInput: new Controller({
      name: 'run-input',
      logger,
      workers,
      reconcile: asReconciler(caches.runInputs, inputs.input, { deleting: 'reconcile' }),
    }),
    waitingInput: new Controller({
      name: 'waiting-input',
      logger,
      workers,
      reconcile: asReconciler(caches.runs, inputs.waitingRun, { deleting: 'reconcile' }),
    }),
  };
  return controllers;
}

/** Which keys each change enqueues: Runs and Runtime Pods name their Runtime, owned objects their controller. */
function enqueueOnChange(caches: ManagerCaches, controllers: Record<ControllerName, Controller>): void {
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
