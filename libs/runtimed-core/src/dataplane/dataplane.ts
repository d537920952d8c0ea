import { join } from 'node:path';
import type { Run } from '@kruntimes/api';
import { AccessReviewer } from '@kruntimes/authz';
import type { SharedInformer } from '@kruntimes/controller-runtime';
import { runtimeIdentity } from '@kruntimes/workload-pki';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { RuntimedConfig } from '../config.ts';
import type { RuntimedMetrics } from '../metrics.ts';
import type { Tracer } from '@kruntimes/tracing';
import type { PeerPods } from '../peer-pods.ts';
import type { RuntimeServerClient } from '../runtime-server.ts';
import { OwnerUnreachableEvents } from './owner-events.ts';
import { PeerForwarder } from './peer-forwarder.ts';
import type { Registrations } from './registrations.ts';
import { runByUidLookup } from './runs-by-uid.ts';
import { startDataplaneServers } from './servers.ts';
import type { DataplaneServers } from './servers.ts';
import { TlsMaterial } from './tls-material.ts';

export interface DataplaneOptions {
  config: RuntimedConfig;
  kubeConfig: KubeConfig;
  logger: Logger;
  metrics: RuntimedMetrics;
  tracer?: Tracer;
  server: RuntimeServerClient;
  /** The informer caches the invoke path reads, and whether both hold a complete list. */
  runs: SharedInformer<Run>;
  peers: PeerPods;
  synced(): boolean;
  registrations: Registrations;
  /** The rest of runtimed's readiness: not stopping, the local Runtime Server answers. */
  up(): boolean;
}

/**
 * Starts the dataplane of runtimed ("The invoke path" in docs/architecture.md): the workload certificate, the
 * peer hop, the OwnerUnreachable Events and the listeners; informer caches only on the
 * invoke path. Its stop also closes the peer connections, the certificate watch and the
 * pending Events.
 */
export async function startDataplane(options: DataplaneOptions): Promise<DataplaneServers> {
  const { config, kubeConfig, logger, metrics, server, peers } = options;
  const { pod } = config;
  const identity = runtimeIdentity(pod.namespace, config.runtime);
  const tls = new TlsMaterial({ dir: join(config.containerRoot, config.tlsDir), expectedIdentity: identity, logger });
  await tls.start();
  const runByUid = runByUidLookup(options.runs);
  const forwarder = new PeerForwarder({ tls, identity, targetName: `${config.runtime}.${pod.namespace}.svc`, port: config.peerPort });
  const ownerEvents = new OwnerUnreachableEvents({ kubeConfig, namespace: pod.namespace, podName: pod.name, logger });
  const servers = await startDataplaneServers({
    host: pod.ip,
    grpcPort: config.grpcPort,
    peerPort: config.peerPort,
    healthPort: config.healthPort,
    tls,
    identity,
    serving: () => options.up() && options.synced() && tls.loaded,
    logger,
    functionRuntime: {
      self: { namespace: pod.namespace, runtime: config.runtime, podName: pod.name, podUID: pod.uid, podIP: pod.ip },
      synced: () => options.synced(),
      runByUid,
      podByUid: (uid) => peers.byUID(uid),
      registrations: options.registrations,
      server,
      authorizer: new AccessReviewer({ kubeConfig, metrics: metrics.authz }),
      forwarder,
      ownerUnreachable: (run, message) => {
        ownerEvents.report(run, message);
      },
      metrics,
      logger,
      ...(options.tracer === undefined ? {} : { tracer: options.tracer }),
    },
  });
  return {
    ...servers,
    async stop() {
      await servers.stop();
      forwarder.close();
      tls.stop();
      await ownerEvents.flush();
    },
  };
}
