import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBinaries } from './binaries.ts';
import { Cluster } from './cluster.ts';
import type { ClusterInfo } from './cluster.ts';
import { installCrds, readCrdDirectory } from './crds.ts';
import { ControlPlaneError } from './errors.ts';
import { httpsGet } from './https-probe.ts';
import { kubeConfigFor, kubeconfigYaml } from './kubeconfig.ts';
import { applyManifestFiles } from './manifests.ts';
import { ManagedProcess } from './managed-process.ts';
import type { ProcessSpec } from './managed-process.ts';
import { generatePki } from './pki.ts';
import type { Pki } from './pki.ts';
import { freePorts, LOOPBACK } from './ports.ts';
import { ADMIN_USER, CONTROLLER_MANAGER_USER, DEFAULT_USERS, KUBE_PROXY_USER, nodeUser, tokenAuthFile, withTokens } from './users.ts';
import type { UserSpec } from './users.ts';
import { waitFor } from './wait.ts';
import { Watchdog, signalGroup } from '@kruntimes/host';

export interface ControlPlaneOptions {
  /** Directory with etcd, kube-apiserver, kube-controller-manager; default: ensureBinaries(). */
  binDir?: string;
  /** Static token users; default: admin (system:masters), alice, bob. */
  users?: readonly UserSpec[];
  /** Start kube-controller-manager (Deployments, ReplicaSets, namespaces, GC, ...). Default true. */
  controllerManager?: boolean;
  /** Directories whose `*.yaml` CustomResourceDefinitions are installed before start returns. */
  crdDirectories?: readonly string[];
  /** YAML files whose objects are created after the CRDs (the chart's admission policies). */
  manifestFiles?: readonly string[];
  /** Parent of the state directory (PKI, etcd data, logs); default: the OS temp dir. */
  tmpRoot?: string;
  /** Bound on the whole start, binaries excluded. Default 90 s (2 busy cores are slow). */
  startTimeoutMs?: number;
  /** Progress lines; default: none. */
  log?: (line: string) => void;
  /**
   * The address kube-apiserver binds, advertises and names in its serving certificate;
   * default 127.0.0.1. Any other address also becomes the `kubernetes` Service's endpoint
   * (Pods of a real node dial it; tools/real-node).
   */
  bindAddress?: string;
  /** kube-apiserver's port; default: a free one. */
  securePort?: number;
  /**
   * Real kubelets that join (tools/real-node): users `system:node:NAME` (in system:nodes)
   * and system:kube-proxy; kube-apiserver then does not verify kubelet serving
   * certificates (a real kubelet's is self-signed). Default: none. Local node agents
   * (tools/local-node) need no entry: they serve with `info.kubeletServer`.
   */
  nodes?: readonly string[];
}

/** Private range that nothing on the host serves ("The control plane for tests and by hand" in README.md). */
const SERVICE_CLUSTER_IP_RANGE = '10.255.0.0/24';
const SERVICE_IP = '10.255.0.1';
const START_ATTEMPTS = 3;

interface Processes {
  etcd?: ManagedProcess;
  apiserver?: ManagedProcess;
  controllerManager?: ManagedProcess;
}

/**
 * etcd, kube-apiserver and (optionally) kube-controller-manager on free loopback ports
 * (kube-apiserver optionally on a given address and port, for a real node), with
 * throwaway PKI and static-token users. `stop()` stops and removes everything; if
 * the process dies first, the watchdog sidecar does.
 */
export class ControlPlane {
  readonly info: ClusterInfo;
  /** Milliseconds per start phase, for the record. */
  readonly timings: Readonly<Record<string, number>>;
  readonly #processes: Processes;
  readonly #watchdog: Watchdog;
  /** How kube-apiserver was started, to start it again the same way (a restart fault). */
  readonly #apiserverSpec: ProcessSpec;
  #stopping: Promise<void> | undefined;

  private constructor(
    info: ClusterInfo,
    processes: Processes,
    watchdog: Watchdog,
    timings: Record<string, number>,
    apiserverSpec: ProcessSpec,
  ) {
    this.info = info;
    this.#processes = processes;
    this.#watchdog = watchdog;
    this.timings = timings;
    this.#apiserverSpec = apiserverSpec;
  }

  static async start(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
    const log = options.log ?? (() => undefined);
    const binDir = options.binDir ?? (await ensureBinaries());
    for (let attempt = 1; ; attempt++) {
      try {
        return await ControlPlane.#startOnce(binDir, options, log);
      } catch (error) {
        // Free ports are chosen before the components bind them; another process can win
        // that race. Only that failure is worth another attempt.
        const portTaken = error instanceof ControlPlaneError && /address already in use/i.test(error.logTail);
        if (!portTaken || attempt >= START_ATTEMPTS) throw error;
        log(`a port was taken before ${String(error.component)} could bind it; starting again`);
      }
    }
  }

  static async #startOnce(binDir: string, options: ControlPlaneOptions, log: (line: string) => void): Promise<ControlPlane> {
    const started = performance.now();
    const timings: Record<string, number> = {};
    const mark = (phase: string): void => {
      timings[phase] = Math.round(performance.now() - started);
    };
    const deadline = started + (options.startTimeoutMs ?? 90_000);
    const remaining = (): number => Math.max(deadline - performance.now(), 1);

    const dir = await mkdtemp(join(options.tmpRoot ?? tmpdir(), 'kruntimes-cp-'));
    const watchdog = Watchdog.start({ graceMs: 5_000, owner: 'the test harness' });
    watchdog.watchDirectory(dir);
    const processes: Processes = {};
    try {
      // The third port goes unused when the caller fixes kube-apiserver's.
      const [etcdClientPort, etcdPeerPort, freeApiserverPort] = (await freePorts(3)) as [number, number, number];
      const network = { bindAddress: options.bindAddress ?? LOOPBACK, port: options.securePort ?? freeApiserverPort };
      const etcdUrl = `http://${LOOPBACK}:${etcdClientPort}`;
      const server = `https://${network.bindAddress}:${network.port}`;
      const nodes = options.nodes ?? [];
      const nodeUsers = nodes.length === 0 ? [] : [...nodes.map(nodeUser), KUBE_PROXY_USER];
      const users = withTokens([...(options.users ?? DEFAULT_USERS), CONTROLLER_MANAGER_USER, ...nodeUsers]);
      const admin = users.find((u) => u.name === ADMIN_USER && u.groups.includes('system:masters'));
      if (admin === undefined) throw new ControlPlaneError(`the users must include ${ADMIN_USER} in system:masters`);

      // etcd needs nothing from the PKI: start it first and let it come up meanwhile.
      processes.etcd = ManagedProcess.start(etcdSpec(binDir, dir, etcdClientPort, etcdPeerPort), watchdog);
      const pki = await generatePki(join(dir, 'pki'), {
        serviceIp: SERVICE_IP,
        ...(network.bindAddress === LOOPBACK ? {} : { extraIps: [network.bindAddress] }),
      });
      mark('pki');
      const caPem = await readFile(pki.caCert, 'utf8');
      await writeFile(join(dir, 'tokens.csv'), tokenAuthFile(users), { mode: 0o600 });
      // kube-apiserver retries etcd until it answers; no need to wait for etcd in between.
      const apiserver = apiserverSpec(binDir, dir, pki, network, etcdUrl, nodes.length > 0);
      processes.apiserver = ManagedProcess.start(apiserver, watchdog);

      await waitReady(
        processes,
        async () => {
          const res = await httpsGet(`${server}/readyz`, { caPem, token: admin.token, timeoutMs: 2_000 });
          return res.status === 200 ? true : undefined;
        },
        'kube-apiserver /readyz',
        remaining(),
      );
      mark('kube-apiserver ready');
      log(`kube-apiserver ready at ${server} after ${timings['kube-apiserver ready']} ms`);

      const info: ClusterInfo = {
        server,
        caPem,
        etcdUrl,
        dir,
        serviceClusterIpRange: SERVICE_CLUSTER_IP_RANGE,
        users,
        // The API server's kubelet client certificate is signed by the cluster CA, as kubeadm does.
        kubeletServer: { certFile: pki.localNodeServingCert, keyFile: pki.localNodeServingKey, clientCaFile: pki.caCert },
      };
      if (options.controllerManager ?? true) {
        const kcmKubeconfig = join(dir, 'kube-controller-manager.kubeconfig');
        const kcm = users.find((u) => u.name === CONTROLLER_MANAGER_USER.name);
        if (kcm === undefined) throw new Error('unreachable: the controller-manager user is always added');
        await writeFile(kcmKubeconfig, kubeconfigYaml({ server, caPem, user: kcm.name, token: kcm.token }), { mode: 0o600 });
        processes.controllerManager = ManagedProcess.start(controllerManagerSpec(binDir, dir, pki, kcmKubeconfig), watchdog);
      }

      const crds = (await Promise.all((options.crdDirectories ?? []).map(readCrdDirectory))).flat();
      if (crds.length > 0) {
        await installCrds(kubeConfigFor({ server, caPem, user: admin.name, token: admin.token }), crds, { timeoutMs: remaining() });
        mark('crds established');
        log(`${crds.length} CustomResourceDefinitions established after ${timings['crds established']} ms`);
      }
      const manifests = options.manifestFiles ?? [];
      if (manifests.length > 0) {
        const count = await applyManifestFiles(kubeConfigFor({ server, caPem, user: admin.name, token: admin.token }), manifests);
        mark('manifests applied');
        log(`${count} objects of ${manifests.join(', ')} applied after ${timings['manifests applied']} ms`);
      }
      mark('total');
      return new ControlPlane(info, processes, watchdog, timings, apiserver);
    } catch (error) {
      try {
        await stopAll(processes, dir, watchdog);
      } catch (stopError) {
        // Report both: why the start failed, and that the cleanup after it failed too.
        throw new AggregateError([error, stopError], 'starting the control plane failed, and so did stopping what had started');
      }
      throw error;
    }
  }

  get server(): string {
    return this.info.server;
  }

  /** Client access: kubeconfigs per user, namespaces. */
  get cluster(): Cluster {
    return new Cluster(this.info);
  }

  /** Resolves when any component exits on its own: the control plane is then broken. */
  async anyExit(): Promise<ManagedProcess> {
    const running = Object.values(this.#processes).filter((p): p is ManagedProcess => p !== undefined);
    return Promise.race(running.map(async (p) => p.exited.then(() => p)));
  }

  /**
   * A fault for soak tests: kube-apiserver stopped (SIGTERM) and started again with the
   * same flags on the same address; resolves once it is ready again. Callers of
   * `anyExit()` from before see the old process's exit.
   */
  async restartApiServer(options: { downMs?: number; readyTimeoutMs?: number } = {}): Promise<void> {
    await this.stopApiServer();
    if (options.downMs !== undefined) await new Promise((resolve) => setTimeout(resolve, options.downMs));
    await this.startApiServer(options);
  }

  /** The first half of restartApiServer, for a test that looks at what clients see while it is down. */
  async stopApiServer(): Promise<void> {
    await this.#processes.apiserver?.stop();
  }

  /** The second half of restartApiServer: started again with the same flags; resolves once ready. */
  async startApiServer(options: { readyTimeoutMs?: number } = {}): Promise<void> {
    this.#processes.apiserver = ManagedProcess.start(this.#apiserverSpec, this.#watchdog);
    const admin = this.info.users.find((user) => user.name === ADMIN_USER);
    await waitReady(
      this.#processes,
      async () => {
        const res = await httpsGet(`${this.info.server}/readyz`, { caPem: this.info.caPem, token: admin?.token ?? '', timeoutMs: 2_000 });
        return res.status === 200 ? true : undefined;
      },
      'kube-apiserver /readyz after its restart',
      options.readyTimeoutMs ?? 60_000,
    );
  }

  /**
   * A fault for soak tests: etcd frozen (SIGSTOP to its process group) until the returned
   * function thaws it (SIGCONT). kube-apiserver's requests that need etcd hang meanwhile.
   */
  freezeEtcd(): () => void {
    const etcd = this.#processes.etcd;
    if (etcd === undefined) throw new Error('etcd is not running');
    signalGroup(etcd.pid, 'SIGSTOP');
    return () => {
      signalGroup(etcd.pid, 'SIGCONT');
    };
  }

  stop(): Promise<void> {
    // A frozen etcd would never stop on SIGTERM within its grace.
    if (this.#processes.etcd !== undefined) signalGroup(this.#processes.etcd.pid, 'SIGCONT');
    this.#stopping ??= stopAll(this.#processes, this.info.dir, this.#watchdog);
    return this.#stopping;
  }
}

/** Waits for `probe`, failing fast (with the component's log) when a component exits. */
async function waitReady(processes: Processes, probe: () => Promise<true | undefined>, what: string, timeoutMs: number): Promise<void> {
  const running = Object.values(processes).filter((p): p is ManagedProcess => p !== undefined);
  const abort = new AbortController();
  const exit = Promise.race(running.map(async (p) => p.exited.then(() => p)));
  try {
    const result = await Promise.race([
      waitFor(what, probe, { timeoutMs, intervalMs: 100, signal: abort.signal }).then(() => undefined),
      exit,
    ]);
    if (result !== undefined) throw await result.failure(`exited while waiting for ${what}`);
  } catch (error) {
    if (error instanceof ControlPlaneError) throw error;
    // A timeout: blame the component being waited for, with its log.
    const culprit = processes.apiserver ?? processes.etcd;
    throw culprit === undefined
      ? error
      : await culprit.failure(`not ready: ${error instanceof Error ? error.message : String(error)}`, error);
  } finally {
    abort.abort();
  }
}

async function stopAll(processes: Processes, dir: string, watchdog: Watchdog): Promise<void> {
  const errors: unknown[] = [];
  const stop = async (p: ManagedProcess | undefined): Promise<void> => {
    try {
      await p?.stop();
    } catch (error) {
      errors.push(error);
    }
  };
  // Clients first, so that they do not log a storm of connection errors; etcd last.
  await Promise.all([stop(processes.controllerManager), stop(processes.apiserver)]);
  await stop(processes.etcd);
  try {
    await rm(dir, { recursive: true, force: true, maxRetries: 3 });
  } catch (error) {
    errors.push(error);
  }
  watchdog.close();
  if (errors.length > 0) throw new AggregateError(errors, 'stopping the control plane failed');
}

function etcdSpec(binDir: string, dir: string, clientPort: number, peerPort: number) {
  const client = `http://${LOOPBACK}:${clientPort}`;
  const peer = `http://${LOOPBACK}:${peerPort}`;
  return {
    component: 'etcd' as const,
    command: join(binDir, 'etcd'),
    args: [
      '--name=default',
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${client}`,
      `--advertise-client-urls=${client}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=default=${peer}`,
      // Throwaway data: durability buys nothing and fsync dominates write latency.
      '--unsafe-no-fsync',
      '--log-level=warn',
    ],
    logFile: join(dir, 'etcd.log'),
  };
}

function apiserverSpec(
  binDir: string,
  dir: string,
  pki: Pki,
  network: { bindAddress: string; port: number },
  etcdUrl: string,
  realNodes: boolean,
) {
  const { bindAddress, port } = network;
  // kube-apiserver dials a node for logs, exec and port-forward: always at its InternalIP
  // (a local node's is on loopback; a real node's is its veth address), never at its name,
  // which would be a DNS query leaving the machine. It presents its own client certificate.
  const kubeletArgs = [
    `--kubelet-client-certificate=${pki.kubeletClientCert}`,
    `--kubelet-client-key=${pki.kubeletClientKey}`,
    '--kubelet-preferred-address-types=InternalIP',
    // A local node agent serves with a certificate from the kubelet serving CA, for its
    // InternalIP. A real kubelet (tools/real-node) serves with a self-signed certificate,
    // which no CA given here could verify: with one joining, the flag is left out and
    // kube-apiserver does not verify kubelets (its default), as in a kubeadm cluster.
    ...(realNodes ? [] : [`--kubelet-certificate-authority=${pki.kubeletServingCaCert}`]),
  ];
  return {
    component: 'kube-apiserver' as const,
    command: join(binDir, 'kube-apiserver'),
    args: [
      `--etcd-servers=${etcdUrl}`,
      `--bind-address=${bindAddress}`,
      `--advertise-address=${bindAddress}`,
      `--secure-port=${port}`,
      `--cert-dir=${join(dir, 'apiserver-certs')}`,
      `--tls-cert-file=${pki.servingCert}`,
      `--tls-private-key-file=${pki.servingKey}`,
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      '--authorization-mode=Node,RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${pki.serviceAccountPublicKey}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
      // There is exactly one API server and it is on loopback: nothing should rewrite the
      // `kubernetes` Service endpoints to an address that would be dialled. On any other
      // address the (default) lease reconciler points them at it, for a real node's Pods.
      ...(bindAddress === LOOPBACK ? ['--endpoint-reconciler-type=none'] : []),
      '--allow-privileged=false',
      '--profiling=false',
      ...kubeletArgs,
    ],
    logFile: join(dir, 'kube-apiserver.log'),
  };
}

function controllerManagerSpec(binDir: string, dir: string, pki: Pki, kubeconfig: string) {
  return {
    component: 'kube-controller-manager' as const,
    command: join(binDir, 'kube-controller-manager'),
    args: [
      `--kubeconfig=${kubeconfig}`,
      '--leader-elect=false',
      // Nothing scrapes or probes it here; not serving avoids one more port to allocate.
      '--secure-port=0',
      '--use-service-account-credentials=true',
      `--service-account-private-key-file=${pki.serviceAccountKey}`,
      `--root-ca-file=${pki.caCert}`,
      '--cluster-name=kruntimes',
    ],
    logFile: join(dir, 'kube-controller-manager.log'),
  };
}
