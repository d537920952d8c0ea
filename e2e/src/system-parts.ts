// The parts of a system, started in order: control plane access, Runtime Pods, services, the gateway.
import { chmod, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { ResourceRequirements } from '@kruntimes/api';
import type { RunIsolation } from '@kruntimes/runtime-workload';
import type { LocalNode } from '@kruntimes/local-node';
import { RUNTIMED_ROLE_RULES } from '@kruntimes/runtimed-core';
import type { Cluster, TestNamespace } from '@kruntimes/testing';
import { NamespaceAccess } from '@kruntimes/testing';
import { startGateway, stopGateway } from './gateway-process.ts';
import type { GatewayProcess } from './gateway-process.ts';
import { RUNTIME_POD_STOP_GRACE_MS, startRuntimePods } from './runtime-pods.ts';
import { startServices } from './services.ts';
import type { Services, Stoppable } from './services.ts';

export interface SystemOptions {
  /** Readable part of the namespace name. */
  prefix: string;
  cluster?: Cluster;
  /** Start stale-recovery in-process too (default false). */
  staleRecovery?: boolean;
  /** Start the gateway (default true). */
  gateway?: boolean;
  /** Extra environment of every runtimed container (an image ENV: the Pod's own env wins), e.g. short Lease durations. */
  podEnv?: Record<string, string>;
  /**
   * Tracing on: the OTLP endpoint (HTTP/protobuf) the gateway exports to, and that the
   * controller-manager gives the Runtime Pods (runtimed, Runtime Server) like in a cluster.
   */
  otlpEndpoint?: string;
  /** How long a Run with an unresolvable source stays Pending before it fails (the scheduler's --source-wait-seconds). */
  sourceWaitMs?: number;
  /** runtimed's container resources (the controller-manager's --runtimed-* flags; its heap flags follow the memory limit). */
  runtimedResources?: ResourceRequirements;
  /**
   * How the Runtime Pods keep Runs apart (default: testWorkloadConfig's). `perRunUser` Pods run
   * in user namespaces of their own: the system's directory is then passable (0711) so that
   * their mapped users reach the node's directory, and its logs stay private (0700).
   */
  runIsolation?: RunIsolation;
  /** The gateway's NODE_OPTIONS (e.g. the heap flags of the chart's memory limit). */
  gatewayNodeOptions?: string;
  /** Node flags of the gateway's command line (the chart's, e.g. `--no-maglev`). */
  gatewayNodeFlags?: readonly string[];
  /** The gateway's --shutdown-delay-seconds (gateway-process.ts's default when unset). */
  gatewayShutdownDelaySeconds?: number;
}

export interface SystemParts extends Services {
  cluster: Cluster;
  namespace: TestNamespace;
  access: NamespaceAccess;
  node: LocalNode;
  gateway: GatewayProcess | undefined;
  dir: string;
}

/** Everything in start order, each pushed to `started` as soon as it runs. */
export async function startSystemParts(
  cluster: Cluster,
  namespace: TestNamespace,
  dir: string,
  options: SystemOptions,
  started: Stoppable[],
): Promise<SystemParts> {
  const ns = namespace.name;
  const access = new NamespaceAccess(cluster, ns);
  if (options.runIsolation === 'perRunUser') {
    await chmod(dir, 0o711);
    await mkdir(join(dir, 'logs'), { recursive: true, mode: 0o700 });
    await mkdir(join(dir, 'gateway'), { recursive: true, mode: 0o700 });
  }
  await access.grantServiceAccount('default', 'runtimed', RUNTIMED_ROLE_RULES);
  const node = await startRuntimePods(cluster.kubeConfig(), {
    namespace: ns,
    dir,
    kubeletServer: cluster.info.kubeletServer,
    ...(options.podEnv === undefined ? {} : { podEnv: options.podEnv }),
    // The image's interpreter: the machine's may sit where the Runs' uids cannot pass.
    ...(options.runIsolation === 'perRunUser' ? { python: '/usr/bin/python3' } : {}),
  });
  started.push({ stop: () => node.stop({ graceMs: RUNTIME_POD_STOP_GRACE_MS }) });
  const services = await startServices({
    namespace: ns,
    access,
    logDir: join(dir, 'logs'),
    staleRecovery: options.staleRecovery === true,
    started,
    ...(options.otlpEndpoint === undefined ? {} : { otlpEndpoint: options.otlpEndpoint }),
    ...(options.sourceWaitMs === undefined ? {} : { sourceWaitMs: options.sourceWaitMs }),
    ...(options.runtimedResources === undefined ? {} : { runtimedResources: options.runtimedResources }),
    ...(options.runIsolation === undefined ? {} : { runIsolation: options.runIsolation }),
  });
  const gateway =
    options.gateway === false
      ? undefined
      : await startGateway({
          cluster,
          namespace: ns,
          access,
          dir: join(dir, 'gateway'),
          internalCaPem: services.internalCa.certPem,
          ...(options.otlpEndpoint === undefined ? {} : { otlpEndpoint: options.otlpEndpoint }),
          ...(options.gatewayNodeOptions === undefined ? {} : { nodeOptions: options.gatewayNodeOptions }),
          ...(options.gatewayNodeFlags === undefined ? {} : { nodeFlags: options.gatewayNodeFlags }),
          ...(options.gatewayShutdownDelaySeconds === undefined ? {} : { shutdownDelaySeconds: options.gatewayShutdownDelaySeconds }),
        });
  if (gateway !== undefined) started.push({ stop: () => stopGateway(gateway) });
  return { ...services, cluster, namespace, access, node, gateway, dir };
}
