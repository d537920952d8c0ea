import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CONDITION_TYPES, RUN_RUNTIME_FIELD } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { CoreV1Api } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { Controller, EventRecorder, InformerFactory, objectKey, splitObjectKey } from '@kruntimes/controller-runtime';
import type { SharedInformer } from '@kruntimes/controller-runtime';
import { KruntimesError } from '@kruntimes/errors';
import { apiStatus, runClient } from '@kruntimes/run-client';
import { findCondition, resolveAutomaticRetryPolicy } from '@kruntimes/run-state';
import type { AutomaticRetryPolicy } from '@kruntimes/run-state';
import type { Logger } from 'pino';
import { ArtifactGrants, startArtifactGrantsServer } from './artifact-grants.ts';
import type { TaskArtifacts } from './artifact-outcome.ts';
import { kubernetesStoreResolver } from './artifact-store-access.ts';
import { ArtifactVerification } from './artifact-verification.ts';
import type { RuntimedConfig } from './config.ts';
import { startDataplane } from './dataplane/dataplane.ts';
import type { RuntimedMetrics } from './metrics.ts';
import type { Tracer } from '@kruntimes/tracing';
import { runRegarding } from './dataplane/owner-events.ts';
import { PeerPods } from './peer-pods.ts';
import { PodLease } from './pod-lease.ts';
import { RunClient } from './run-client.ts';
import { CheckpointReader } from './resume.ts';
import { runtimedRunProjection } from './run-cache.ts';
import { RunReconciler } from './run-reconciler.ts';
import { RuntimeServerClient } from './runtime-server.ts';
import type { ConfigMapReader } from './workspace.ts';
import { Workspaces } from './workspace.ts';

/** How often the local Runtime Server's health is checked for runtimed's own readiness. */
const RUNTIME_SERVER_HEALTH_MS = 2_000;

export interface RuntimedOptions {
  config: RuntimedConfig;
  kubeConfig: KubeConfig;
  logger: Logger;
  metrics: RuntimedMetrics;
  /** Tracing on: spans of the invoke path (@kruntimes/tracing's startTracing); undefined: none. */
  tracer?: Tracer;
  /** Reconcile workers; Runs are independent, a slow one must not hold the others. */
  workers?: number;
}

export interface RunningRuntimed {
  /** The bound ports: FunctionRuntime over TLS, over mTLS for peers, plaintext health. */
  grpcPort: number;
  peerPort: number;
  healthPort: number;
  /** The watch-backed cache of this Runtime's Pods (peer addresses, readiness). */
  peers: PeerPods;
  /**
   * The drain at SIGTERM (docs/operations.md "Drain"): not ready at once, no claims, function
   * Runs handed over, tasks given the drain window. Resolves when nothing is held here.
   */
  drain(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts runtimed: the Pod Lease, the Run informer of its namespace (filtered to its
 * Runtime), the Pod informer of its Runtime, the reconciler, and on the Pod IP the
 * dataplane (FunctionRuntime on the TLS and mTLS ports) and the plaintext gRPC health
 * service that the readinessProbe checks. SERVING once the caches are synced, the local
 * Runtime Server answers and the workload certificate is loaded; NOT_SERVING otherwise
 * and from shutdown on.
 */
export async function startRuntimed(options: RuntimedOptions): Promise<RunningRuntimed> {
  const { config, logger } = options;
  const { pod } = config;
  const clients = await buildClients(options);
  const caches = await buildCaches(options);
  // The Lease is built after the reconciler (it reports the reconciler's Runs); grants read its expiry when asked.
  const built: { lease?: PodLease } = {};
  const artifacts = await startArtifacts(options, clients, () => built.lease?.expiresAtMs());
  // A handover's release is written to the Lease before its status write (the third fence proof).
  const reportReleased = async (): Promise<void> => {
    if (built.lease === undefined) throw new KruntimesError('Internal', 'the Pod Lease is not started yet');
    await built.lease.reportNow();
  };
  const { controller, reconciler } = buildReconciler(options, clients, caches, artifacts.task, reportReleased);
  const runtimeServer = watchRuntimeServer(clients.server, logger);
  let stopping = false;
  const dataplane = await startDataplane({
    ...options,
    server: clients.server,
    runs: caches.runs,
    peers: caches.peers,
    synced: () => caches.synced(),
    registrations: reconciler,
    up: () => !stopping && runtimeServer.serving(),
  });
  caches.peers.watchOwn(pod.uid, (own) => {
    reconciler.observeOwnPod(own);
  });
  const lease = buildPodLease(options, reconciler);
  built.lease = lease;
  await lease.start();
  controller.start();
  await caches.informers.start();
  await dropOutcomeRecordsOfGoneRuns(reconciler, config.pod.namespace, logger);
  const { grpcPort, peerPort, healthPort } = dataplane;
  logger.info(
    {
      pod: pod.name,
      podUID: pod.uid,
      runtime: config.runtime,
      capabilities: config.capabilities,
      // Unset only on a Pod made without KRT_RUNS_PER_POD: then no claim is checked against a capacity.
      runsPerPod: config.runsPerPod ?? 'unchecked',
      automaticRetry: config.automaticRetry,
      grpcPort,
      peerPort,
      healthPort,
      runtimeServer: config.runtimeServerAddress,
      artifactGrants: artifacts.task.grantAddress,
    },
    'runtimed started',
  );

  return {
    grpcPort,
    peerPort,
    healthPort,
    peers: caches.peers,
    async drain() {
      // Not ready from now on: the Service and the gateway stop sending invocations here.
      stopping = true;
      await reconciler.drain(pod.namespace, config.drainSeconds);
    },
    async stop() {
      stopping = true;
      runtimeServer.stop();
      await controller.stop();
      await reconciler.shutdown();
      // No execution is left: no grant can be asked for any more.
      await artifacts.stop();
      await caches.informers.stop();
      await lease.stop();
      await dataplane.stop();
      clients.server.close();
      logger.info('runtimed stopped');
    },
  };
}

interface Clients {
  server: RuntimeServerClient;
  runs: RunClient;
  readConfigMap: ConfigMapReader;
  automaticRetryPolicy: (namespace: string) => Promise<AutomaticRetryPolicy>;
  gatewayCaPem: string | undefined;
}

async function buildClients({ config, kubeConfig, metrics }: RuntimedOptions): Promise<Clients> {
  // Read first: a missing file fails the start before any client exists.
  const gatewayCaPem =
    config.gatewayCaFile === undefined ? undefined : await readFile(join(config.containerRoot, config.gatewayCaFile), 'utf8');
  const core = kubeConfig.makeApiClient(CoreV1Api);
  return {
    server: new RuntimeServerClient(
      config.runtimeServerAddress,
      config.runtimeServerTokenFile === undefined ? undefined : join(config.containerRoot, config.runtimeServerTokenFile),
    ),
    runs: new RunClient(kubeConfig, {
      onConflict: () => {
        metrics.statusConflict();
      },
    }),
    readConfigMap: async (namespace, name, key) => {
      const configMap = await core.readNamespacedConfigMap({ name, namespace });
      const value = configMap.data?.[key];
      if (value === undefined) throw new KruntimesError('InvalidRequest', `ConfigMap ${namespace}/${name} has no key ${key}`);
      return value;
    },
    // Read live, only when an interrupted retrySafe task would be retried (rare): an
    // annotation set a moment ago counts, and an unreadable namespace retries the reconcile.
    automaticRetryPolicy: async (namespace) => {
      const object = await core.readNamespace({ name: namespace });
      return resolveAutomaticRetryPolicy({ clusterAllows: config.automaticRetry, namespace, annotations: object.metadata?.annotations });
    },
    gatewayCaPem,
  };
}

interface Caches {
  informers: InformerFactory;
  /**
   * This Runtime's Runs, selected by the API server (spec.runtime is a selectable field), or
   * the namespace's Runs where the server cannot select on it (then filtered in buildReconciler):
   * whole when assigned to this Pod, slim otherwise (runtimedRunView says what is kept).
   */
  runs: SharedInformer<Run>;
  peers: PeerPods;
  synced(): boolean;
}

async function buildCaches({ config, kubeConfig, logger }: RuntimedOptions): Promise<Caches> {
  const informers = new InformerFactory({ kubeConfig, logger });
  const fieldSelector = `${RUN_RUNTIME_FIELD}=${config.runtime}`;
  const selectable = await serverSelectsRuns(kubeConfig, config.pod.namespace, fieldSelector);
  if (!selectable) {
    logger.warn(
      { fieldSelector },
      'the API server cannot select Runs by spec.runtime (a Run CRD without selectableFields, or Kubernetes before 1.31): every Run of the namespace is watched and filtered here',
    );
  }
  const runs = informers.runs({
    namespace: config.pod.namespace,
    ...(selectable ? { fieldSelector } : {}),
    projection: runtimedRunProjection(config.pod.uid),
  });
  const peers = new PeerPods(kubeConfig, config.pod.namespace, config.runtime, logger, informers);
  return { informers, runs, peers, synced: () => runs.hasSynced && peers.hasSynced };
}

/**
 * Whether the API server answers a Run list selected by `fieldSelector` (one item asked for):
 * false for its 400 (the field is not selectable there); any other failure is thrown.
 */
async function serverSelectsRuns(kubeConfig: KubeConfig, namespace: string, fieldSelector: string): Promise<boolean> {
  try {
    await runClient(kubeConfig).list(namespace, { fieldSelector, limit: 1 });
    return true;
  } catch (error) {
    if (apiStatus(error) === 400) return false;
    throw error;
  }
}

/** ArtifactGrants on loopback, and the verification at exit 0, over the namespace's ArtifactStores. */
async function startArtifacts(
  { config, kubeConfig, logger }: RuntimedOptions,
  clients: Clients,
  leaseExpiresAtMs: () => number | undefined,
): Promise<{ task: TaskArtifacts; stop(): Promise<void> }> {
  const stores = kubernetesStoreResolver(kubeConfig);
  const grants = new ArtifactGrants({
    runs: clients.runs,
    stores,
    leaseExpiresAtMs,
    runtime: config.runtime,
    capabilities: config.capabilities,
    logger,
  });
  const server = await startArtifactGrantsServer(grants, config.artifactGrantsAddress, logger);
  return {
    task: {
      grants,
      grantAddress: server.address,
      verification: new ArtifactVerification({ stores }),
      checkpoints: new CheckpointReader({ stores }),
    },
    stop: () => server.stop(),
  };
}

function buildReconciler(
  options: RuntimedOptions,
  clients: Clients,
  caches: Caches,
  artifacts: TaskArtifacts,
  reportReleased: () => Promise<void>,
): { controller: Controller; reconciler: RunReconciler } {
  const { config, logger, metrics } = options;
  const { pod } = config;
  const events = EventRecorder.forKubeConfig(options.kubeConfig, { component: 'runtimed', instance: pod.name, logger });
  // The reconciler re-enqueues a key when a background execution ends; the controller
  // that owns the queue is created right after it.
  const controller: Controller = new Controller({
    name: 'runs',
    reconcile: (key, signal) => reconciler.reconcile(key, signal),
    logger,
    workers: options.workers ?? 4,
  });
  const reconciler = new RunReconciler({
    podUID: pod.uid,
    podName: pod.name,
    runtime: config.runtime,
    language: config.language,
    gatewayHost: config.gatewayHost,
    gatewayCaPem: clients.gatewayCaPem,
    cancelGraceMs: config.cancelGraceSeconds * 1000,
    runsPerPod: config.runsPerPod,
    cached: (namespace, name) => caches.runs.get(name, namespace),
    cachedRuns: (namespace) => caches.runs.list(namespace),
    runs: clients.runs,
    server: clients.server,
    artifacts,
    workspaces: new Workspaces(join(config.containerRoot, config.workspaceDir)),
    readConfigMap: clients.readConfigMap,
    automaticRetryPolicy: clients.automaticRetryPolicy,
    logger,
    metrics,
    enqueue: (key) => {
      controller.enqueue(key);
    },
    reportReleased,
    recordEvent: (run, reason, message) => {
      void events.event({ regarding: runRegarding(pod.namespace, run), type: 'Normal', reason, message });
    },
  });
  exportHeldFunctions(options, reconciler, caches.runs);
  // Only Runs of this Runtime (the cache may hold the namespace's, see buildCaches), plus
  // any Run this process holds state for, whatever it says now.
  caches.runs.enqueueTo(
    (key) => {
      controller.enqueue(key);
    },
    (run) => (run.spec.runtime === config.runtime || reconciler.localKeys().includes(objectKey(run)) ? objectKey(run) : undefined),
  );
  return { controller, reconciler };
}

/** Per-function series exist only for the function Runs this process holds (bounded by its capacity). */
function exportHeldFunctions({ config, metrics }: RuntimedOptions, reconciler: RunReconciler, runs: SharedInformer<Run>): void {
  const { namespace } = config.pod;
  metrics.functions.observeHeld(() =>
    reconciler.heldFunctionKeys().map((key) => {
      const { name } = splitObjectKey(key);
      const ready = findCondition(runs.get(name, namespace)?.status?.conditions, CONDITION_TYPES.ready);
      const since = ready?.status === 'True' ? Date.parse(ready.lastTransitionTime) : Number.NaN;
      return { namespace, runtime: config.runtime, run: name, readySinceMs: Number.isNaN(since) ? undefined : since };
    }),
  );
}

/**
 * Housekeeping after the caches synced: a failure leaves the records (a few small files)
 * to the next start, and is logged; it must not keep runtimed from starting.
 */
async function dropOutcomeRecordsOfGoneRuns(reconciler: RunReconciler, namespace: string, logger: Logger): Promise<void> {
  try {
    await reconciler.dropOutcomeRecordsOfGoneRuns(namespace);
  } catch (error) {
    logger.error({ err: error }, 'could not drop the outcome records of deleted Runs');
  }
}

/** The local Runtime Server's health, polled for runtimed's own readiness. */
function watchRuntimeServer(server: RuntimeServerClient, logger: Logger): { serving(): boolean; stop(): void } {
  let serving = false;
  const check = async (): Promise<void> => {
    try {
      serving = await server.serving(AbortSignal.timeout(RUNTIME_SERVER_HEALTH_MS));
    } catch (error) {
      if (serving) logger.warn({ err: error }, 'the Runtime Server stopped answering');
      serving = false;
    }
  };
  const timer = setInterval(() => void check(), RUNTIME_SERVER_HEALTH_MS);
  timer.unref();
  void check();
  return {
    serving: () => serving,
    stop: () => {
      clearInterval(timer);
    },
  };
}

function buildPodLease({ config, kubeConfig, logger, metrics }: RuntimedOptions, reconciler: RunReconciler): PodLease {
  return new PodLease({
    kubeConfig,
    pod: config.pod,
    runtime: config.runtime,
    durationSeconds: config.leaseDurationSeconds,
    renewSeconds: config.leaseRenewSeconds,
    logger,
    onRenewed: (ok) => {
      metrics.leaseRenewal(ok);
    },
    runs: () => reconciler.leaseReport(),
  });
}
