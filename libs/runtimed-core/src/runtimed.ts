import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { API_GROUP, API_VERSION, CONDITION_TYPES, RUN_PLURAL } from '@kruntimes/api';
import type { Run } from '@kruntimes/api';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { Controller, SharedInformer, objectKey, splitObjectKey } from '@kruntimes/controller-runtime';
import type { ReadonlyDeep } from '@kruntimes/controller-runtime';
import { KruntimesError } from '@kruntimes/errors';
import { findCondition } from '@kruntimes/run-state';
import { AccessReviewer } from '@kruntimes/authz';
import { runtimeIdentity } from '@kruntimes/workload-pki';
import type { Logger } from 'pino';
import type { RuntimedConfig } from './config.ts';
import { OwnerUnreachableEvents } from './dataplane/owner-events.ts';
import { PeerForwarder } from './dataplane/peer-forwarder.ts';
import { RunsByUid } from './dataplane/runs-by-uid.ts';
import { startDataplaneServers } from './dataplane/servers.ts';
import { TlsMaterial } from './dataplane/tls-material.ts';
import type { RuntimedMetrics } from './metrics.ts';
import { PeerPods } from './peer-pods.ts';
import { PodLease } from './pod-lease.ts';
import { RunClient } from './run-client.ts';
import { RunReconciler } from './run-reconciler.ts';
import { RuntimeServerClient } from './runtime-server.ts';
import { Workspaces } from './workspace.ts';

type RunObject = Run & KubernetesObject;

/** How often the local Runtime Server's health is checked for runtimed's own readiness. */
const RUNTIME_SERVER_HEALTH_MS = 2_000;

export interface RuntimedOptions {
  config: RuntimedConfig;
  kubeConfig: KubeConfig;
  logger: Logger;
  metrics: RuntimedMetrics;
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
  const { config, kubeConfig, logger, metrics } = options;
  const { pod } = config;
  const customObjects = kubeConfig.makeApiClient(CustomObjectsApi);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const gatewayCaPem =
    config.gatewayCaFile === undefined ? undefined : await readFile(join(config.containerRoot, config.gatewayCaFile), 'utf8');
  const server = new RuntimeServerClient(config.runtimeServerAddress);
  const runs = new RunClient(kubeConfig, {
    onConflict: () => {
      metrics.statusConflict();
    },
  });

  const informer = new SharedInformer<RunObject>({
    name: 'runs',
    kubeConfig,
    path: `/apis/${API_GROUP}/${API_VERSION}/namespaces/${pod.namespace}/${RUN_PLURAL}`,
    list: () =>
      customObjects.listNamespacedCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        namespace: pod.namespace,
        plural: RUN_PLURAL,
      }) as Promise<KubernetesListObject<RunObject>>,
    logger,
  });
  const peers = new PeerPods(kubeConfig, pod.namespace, config.runtime, logger);
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
    gatewayCaPem,
    cancelGraceMs: config.cancelGraceSeconds * 1000,
    // The cache holds what the API server sent: a Run (client-node's ObjectMeta type differs only in Date fields it never parses for custom objects).
    cached: (namespace, name) => informer.get(name, namespace) as ReadonlyDeep<Run> | undefined,
    runs,
    server,
    workspaces: new Workspaces(join(config.containerRoot, config.workspaceDir)),
    readConfigMap: async (namespace, name, key) => {
      const configMap = await core.readNamespacedConfigMap({ name, namespace });
      const value = configMap.data?.[key];
      if (value === undefined) throw new KruntimesError('InvalidRequest', `ConfigMap ${namespace}/${name} has no key ${key}`);
      return value;
    },
    logger,
    metrics,
    enqueue: (key) => {
      controller.enqueue(key);
    },
  });
  // Per-function series exist only for the function Runs this process holds (bounded by its capacity).
  metrics.functions.observeHeld(() =>
    reconciler.heldFunctionKeys().map((key) => {
      const { name } = splitObjectKey(key);
      const ready = findCondition(informer.get(name, pod.namespace)?.status?.conditions, CONDITION_TYPES.ready);
      const since = ready?.status === 'True' ? Date.parse(ready.lastTransitionTime) : Number.NaN;
      return { namespace: pod.namespace, runtime: config.runtime, run: name, readySinceMs: Number.isNaN(since) ? undefined : since };
    }),
  );
  // Only Runs of this Runtime (client-side: Runs carry spec.runtime, not a label), plus
  // any Run this process holds state for, whatever it says now.
  informer.enqueueTo(
    (key) => {
      controller.enqueue(key);
    },
    (run) => (run.spec.runtime === config.runtime || reconciler.localKeys().includes(objectKey(run)) ? objectKey(run) : undefined),
  );

  let runtimeServerServing = false;
  let stopping = false;
  const checkRuntimeServer = async (): Promise<void> => {
    try {
      runtimeServerServing = await server.serving(AbortSignal.timeout(RUNTIME_SERVER_HEALTH_MS));
    } catch (error) {
      if (runtimeServerServing) logger.warn({ err: error }, 'the Runtime Server stopped answering');
      runtimeServerServing = false;
    }
  };
  const healthTimer = setInterval(() => void checkRuntimeServer(), RUNTIME_SERVER_HEALTH_MS);
  healthTimer.unref();
  void checkRuntimeServer();

  // The dataplane (ARCHITECTURE §6-§7): informer caches only on the invoke path.
  const identity = runtimeIdentity(pod.namespace, config.runtime);
  const tls = new TlsMaterial({ dir: join(config.containerRoot, config.tlsDir), expectedIdentity: identity, logger });
  await tls.start();
  const runsByUid = new RunsByUid(informer, pod.namespace);
  const forwarder = new PeerForwarder({ tls, identity, targetName: `${config.runtime}.${pod.namespace}.svc`, port: config.peerPort });
  const ownerEvents = new OwnerUnreachableEvents({ kubeConfig, namespace: pod.namespace, podName: pod.name, logger });
  const dataplane = await startDataplaneServers({
    host: pod.ip,
    grpcPort: config.grpcPort,
    peerPort: config.peerPort,
    healthPort: config.healthPort,
    tls,
    identity,
    serving: () => !stopping && informer.hasSynced && peers.hasSynced && runtimeServerServing && tls.loaded,
    logger,
    functionRuntime: {
      self: { namespace: pod.namespace, runtime: config.runtime, podName: pod.name, podUID: pod.uid },
      synced: () => informer.hasSynced && peers.hasSynced,
      runByUid: (uid) => runsByUid.get(uid),
      podByUid: (uid) => peers.byUID(uid),
      registrationFor: (uid, attempt) => reconciler.registrationFor(uid, attempt),
      server,
      authorizer: new AccessReviewer({ kubeConfig, metrics: metrics.authz }),
      forwarder,
      ownerUnreachable: (run, message) => {
        ownerEvents.report(run, message);
      },
      metrics,
      logger,
    },
  });
  const { grpcPort, peerPort, healthPort } = dataplane;

  const lease = new PodLease({
    kubeConfig,
    pod,
    runtime: config.runtime,
    durationSeconds: config.leaseDurationSeconds,
    renewSeconds: config.leaseRenewSeconds,
    logger,
    onRenewed: (ok) => {
      metrics.leaseRenewal(ok);
    },
    runs: () => reconciler.leaseReport(),
  });
  await lease.start();
  controller.start();
  await Promise.all([informer.start(), peers.start()]);
  logger.info(
    { pod: pod.name, podUID: pod.uid, runtime: config.runtime, grpcPort, peerPort, healthPort, runtimeServer: config.runtimeServerAddress },
    'runtimed started',
  );

  return {
    grpcPort,
    peerPort,
    healthPort,
    peers,
    async stop() {
      stopping = true;
      clearInterval(healthTimer);
      await controller.stop();
      await reconciler.shutdown();
      await informer.stop();
      await peers.stop();
      await lease.stop();
      await dataplane.stop();
      forwarder.close();
      tls.stop();
      await ownerEvents.flush();
      server.close();
      logger.info('runtimed stopped');
    },
  };
}
