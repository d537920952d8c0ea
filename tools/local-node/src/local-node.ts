import { EventEmitter } from 'node:events';
import { chmodSync, mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuthorizationV1Api, CoreV1Api, makeInformer, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Informer, KubeConfig, ObjectCache, V1Pod } from '@kubernetes/client-node';
import { Controller } from '@kruntimes/controller-runtime';
import type { ReconcileResult } from '@kruntimes/controller-runtime';
import { Watchdog } from '@kruntimes/host';
import { AddressPool } from './address-pool.ts';
import { isConflict, isNotFound } from './api-objects.ts';
import { KUBELET_BACKOFF } from './backoff.ts';
import { DEFAULT_SCHEDULER_NAMES } from './config.ts';
import type { KubeletServerConfig, LocalNodeConfig } from './config.ts';
import { ConfigError, ContainerConfigError, LocalNodeError } from './errors.ts';
import { KubeletServer } from './kubelet-server.ts';
import type { CertificateUser } from './kubelet-server.ts';
import { assertLoopback } from './loopback.ts';
import { NodeRegistration } from './node-registration.ts';
import { PodRuntime } from './pod-runtime.ts';
import { UidRangePool } from './uid-range-pool.ts';
import type { LocalNodeEvent } from './pod-runtime.ts';

export const HOST_IP = '127.0.0.1';
const INFORMER_RESTART_MS = 1_000;
const TERMINAL_PHASES = new Set(['Succeeded', 'Failed']);

export interface LocalNodeLogger {
  info(object: object, message: string): void;
  error(object: object, message: string): void;
  debug(object: object, message: string): void;
}

export interface LocalNodeOptions {
  /** Deletes the Node object on stop (tests); a kubelet leaves it. Default false. */
  deleteNodeOnStop?: boolean;
  logger?: LocalNodeLogger;
}

type PodInformer = Informer<V1Pod> & ObjectCache<V1Pod>;

/**
 * The local node agent: registers a Node, binds the unscheduled Pods it is configured to
 * take, and runs the Pods bound to it as process groups on their own 127.0.0.x, reporting
 * status the way the kubelet does. One reconcile per Pod key (`namespace/name`) at a
 * time, from the de-duplicating work queue of @kruntimes/controller-runtime.
 */
export class LocalNode {
  readonly config: LocalNodeConfig;
  readonly events = new EventEmitter<{ event: [LocalNodeEvent] }>();
  readonly #kubeConfig: KubeConfig;
  readonly #core: CoreV1Api;
  readonly #options: LocalNodeOptions;
  readonly #logger: LocalNodeLogger;
  readonly #pool: AddressPool;
  readonly #uidRanges: UidRangePool;
  readonly #registration: NodeRegistration;
  readonly #controller: Controller;
  readonly #runtimes = new Map<string, PodRuntime>();
  readonly #lastWritten = new Map<string, string>();
  readonly #apiServer: { host: string; port: number };
  #informers: { namespace: string | undefined; informer: PodInformer }[] = [];
  #watchdog: Watchdog | undefined;
  #kubelet: KubeletServer | undefined;
  /** SubjectAccessReview answers per user, kept as long as the kubelet's webhook authorizer keeps them. */
  readonly #authorizations = new Map<string, { allowed: boolean; until: number }>();
  #stopping = false;

  constructor(kubeConfig: KubeConfig, config: LocalNodeConfig, options: LocalNodeOptions = {}) {
    this.config = config;
    this.#kubeConfig = kubeConfig;
    this.#core = kubeConfig.makeApiClient(CoreV1Api);
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    const server = kubeConfig.getCurrentCluster()?.server;
    if (server === undefined) throw new ConfigError('the kubeconfig has no current cluster');
    const url = new URL(server);
    assertLoopback(url.hostname, 'API server');
    this.#apiServer = { host: url.hostname, port: url.port === '' ? 443 : Number.parseInt(url.port, 10) };
    mkdirSync(config.stateDir, { recursive: true });
    // Pods' processes pass through to their own directory; the logs are the agent's only.
    chmodSync(config.stateDir, 0o711);
    mkdirSync(join(config.stateDir, 'pods'), { recursive: true, mode: 0o711 });
    chmodSync(join(config.stateDir, 'pods'), 0o711);
    mkdirSync(join(config.stateDir, 'logs'), { recursive: true, mode: 0o700 });
    chmodSync(join(config.stateDir, 'logs'), 0o700);
    // Host-wide whatever the address pool's directory: two agents' Pods must never share ids.
    this.#uidRanges = new UidRangePool(join(tmpdir(), 'kruntimes-local-node', 'uid-ranges'));
    this.#pool = new AddressPool(config.addressLockDir ?? join(tmpdir(), 'kruntimes-local-node', 'addresses'));
    this.#registration = new NodeRegistration(kubeConfig, {
      nodeName: config.nodeName,
      leaseDurationSeconds: config.leaseDurationSeconds ?? 40,
      hostIP: HOST_IP,
      kubeletPort: () => this.#kubelet?.port ?? 0,
    });
    this.#controller = new Controller({ name: 'local-node', reconcile: (key) => this.#reconcile(key), logger: this.#logger, workers: 4 });
  }

  get nodeName(): string {
    return this.config.nodeName;
  }

  async start(): Promise<void> {
    this.#watchdog = Watchdog.start({ graceMs: 2_000, owner: 'local-node' });
    // Listening before the Node is registered: its status names the port.
    if (this.config.kubeletServer !== undefined) this.#kubelet = await this.#startKubeletServer(this.config.kubeletServer);
    await this.#registration.register((error: unknown) => {
      this.#logger.error({ err: error }, 'node lease renewal failed; retried on the next period');
    });
    const namespaces = this.config.namespaces ?? [undefined];
    for (const namespace of namespaces) {
      const path = namespace === undefined ? '/api/v1/pods' : `/api/v1/namespaces/${namespace}/pods`;
      const informer = makeInformer<V1Pod>(this.#kubeConfig, path, () =>
        namespace === undefined ? this.#core.listPodForAllNamespaces() : this.#core.listNamespacedPod({ namespace }),
      );
      const enqueue = (pod: V1Pod): void => {
        this.#controller.enqueue(`${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`);
      };
      informer.on('add', enqueue);
      informer.on('update', enqueue);
      informer.on('delete', enqueue);
      informer.on('error', (error: unknown) => {
        if (this.#stopping) return;
        this.#logger.error({ err: error, namespace }, 'pod watch failed; restarting it');
        setTimeout(() => {
          if (!this.#stopping)
            informer.start().catch((restartError: unknown) => {
              this.#logger.error({ err: restartError }, 'pod watch restart failed');
            });
        }, INFORMER_RESTART_MS);
      });
      await informer.start();
      this.#informers.push({ namespace, informer });
    }
    this.#controller.start();
  }

  /** Stops every process it started (gracefully, bounded by each Pod's grace period). */
  async stop(options: { graceMs?: number } = {}): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    // Followers of a log end now, not when the Pods do: kube-apiserver ends their streams.
    await this.#kubelet?.close();
    await Promise.all(this.#informers.map(({ informer }) => informer.stop()));
    await this.#controller.stop();
    this.#registration.stop();
    await Promise.all([...this.#runtimes.values()].map((runtime) => runtime.terminate(options.graceMs)));
    for (const runtime of this.#runtimes.values()) {
      await runtime.dispose();
      this.#pool.release(runtime.podIP);
    }
    this.#runtimes.clear();
    this.#watchdog?.close();
    if (this.#options.deleteNodeOnStop === true) await this.#registration.deleteNode();
  }

  /** The port of the kubelet endpoint on the InternalIP (HOST_IP); undefined without `kubeletServer`. */
  get kubeletPort(): number | undefined {
    return this.#kubelet?.port;
  }

  async #startKubeletServer(config: KubeletServerConfig): Promise<KubeletServer> {
    const [certPem, keyPem, clientCaPem] = await Promise.all(
      [config.certFile, config.keyFile, config.clientCaFile].map(async (file) => readFile(file, 'utf8')),
    );
    return KubeletServer.start({
      host: HOST_IP,
      port: config.port ?? 0,
      certPem: certPem ?? '',
      keyPem: keyPem ?? '',
      clientCaPem: clientCaPem ?? '',
      authorize: (user) => this.#authorize(user),
      lookup: (namespace, name, container, previous) => {
        const runtime = [...this.#runtimes.values()].find((r) => r.key === `${namespace}/${name}` && !r.zombie);
        if (runtime === undefined) return { kind: 'not-found', message: `pod "${name}" does not exist` };
        const log = runtime.containerLog(container, previous);
        if (log === undefined) return { kind: 'not-found', message: `container "${container}" not found in pod "${name}"` };
        return 'error' in log ? { kind: 'unavailable', message: log.error } : { kind: 'log', ...log };
      },
      onError: (error) => {
        this.#logger.error({ err: error }, 'kubelet endpoint request failed');
      },
    });
  }

  /**
   * As the kubelet's webhook authorizer: may the certificate's user get this node's
   * `proxy` subresource (what /containerLogs is)? Allowed answers are kept 5 minutes,
   * denied ones 30 seconds (the kubelet's defaults).
   */
  async #authorize(user: CertificateUser): Promise<boolean> {
    const key = JSON.stringify(user);
    const cached = this.#authorizations.get(key);
    if (cached !== undefined && cached.until > Date.now()) return cached.allowed;
    const review = await this.#kubeConfig.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
      body: {
        spec: {
          user: user.name,
          groups: user.groups,
          resourceAttributes: { verb: 'get', resource: 'nodes', subresource: 'proxy', name: this.nodeName },
        },
      },
    });
    const allowed = review.status?.allowed === true;
    this.#authorizations.set(key, { allowed, until: Date.now() + (allowed ? 300_000 : 30_000) });
    return allowed;
  }

  // ---- lib API for tests ----

  /** Every PID (= process group) this agent currently runs, zombies included. */
  pids(): number[] {
    return [...this.#runtimes.values()].flatMap((runtime) => runtime.pids());
  }

  logFile(namespace: string, name: string, container: string): string {
    return this.#runtime(namespace, name).logFile(container);
  }

  /** Kills a container's processes (default SIGKILL); restartPolicy decides what happens next. */
  crashContainer(namespace: string, name: string, container: string, signal: NodeJS.Signals = 'SIGKILL'): void {
    if (!this.#runtime(namespace, name).crash(container, signal))
      throw new LocalNodeError(`container ${container} of ${namespace}/${name} is not running`);
  }

  /** SIGSTOP to every process of the Pod: it stops answering, like a partitioned node. */
  freezePod(namespace: string, name: string): void {
    this.#runtime(namespace, name).freeze();
  }

  thawPod(namespace: string, name: string): void {
    this.#runtime(namespace, name).thaw();
  }

  /**
   * Deletes the Pod object with grace 0 but leaves its processes running, like a node that
   * lost contact: the processes are a zombie that fencing must keep out. Returns the UID;
   * `killZombie(uid)` (or stop()) ends them.
   */
  async forceDeletePod(namespace: string, name: string): Promise<string> {
    const runtime = this.#runtime(namespace, name);
    runtime.zombie = true;
    await this.#core.deleteNamespacedPod({ namespace, name, body: { gracePeriodSeconds: 0, preconditions: { uid: runtime.uid } } });
    return runtime.uid;
  }

  async killZombie(uid: string): Promise<void> {
    const runtime = this.#runtimes.get(uid);
    if (runtime?.zombie !== true) throw new LocalNodeError(`no zombie Pod with UID ${uid}`);
    await this.#teardown(runtime, 0);
  }

  #runtime(namespace: string, name: string): PodRuntime {
    const key = `${namespace}/${name}`;
    const found = [...this.#runtimes.values()].find((runtime) => runtime.key === key && !runtime.zombie);
    if (found === undefined) throw new LocalNodeError(`Pod ${key} is not running on node ${this.nodeName}`);
    return found;
  }

  #cached(namespace: string, name: string): V1Pod | undefined {
    for (const { namespace: ns, informer } of this.#informers) {
      if (ns === undefined || ns === namespace) {
        const pod = informer.get(name, namespace);
        if (pod !== undefined) return pod;
      }
    }
    return undefined;
  }

  // ---- reconcile ----

  async #reconcile(key: string): Promise<ReconcileResult | undefined> {
    const slash = key.indexOf('/');
    const namespace = key.slice(0, slash);
    const name = key.slice(slash + 1);
    const pod = this.#cached(namespace, name);
    const uid = pod?.metadata?.uid;
    // Processes of a Pod that no longer exists (or was replaced under the same name) are killed.
    for (const runtime of [...this.#runtimes.values()]) {
      if (runtime.key === key && runtime.uid !== uid && !runtime.zombie) await this.#teardown(runtime);
    }
    if (pod === undefined || uid === undefined) return undefined;
    const nodeName = pod.spec?.nodeName;
    if (nodeName === undefined || nodeName === '') {
      await this.#maybeBind(pod);
      return undefined;
    }
    if (nodeName !== this.nodeName) return undefined;
    let runtime = this.#runtimes.get(uid);
    if (pod.metadata?.deletionTimestamp !== undefined) {
      await this.#finishDeletion(pod, runtime);
      return undefined;
    }
    if (runtime === undefined) {
      if (TERMINAL_PHASES.has(pod.status?.phase ?? '')) return undefined;
      if (pod.status?.podIP !== undefined && pod.status.podIP !== '') {
        // Bound to this node by an earlier run of the agent, whose processes are gone
        // (the watchdog killed them). Its address cannot move, so the Pod fails and its
        // controller replaces it, as after a node reboot with a lost sandbox.
        await this.#patchStatus(pod, {
          phase: 'Failed',
          reason: 'NodeRestarted',
          message: `the local node agent ${this.nodeName} restarted; the Pod's processes are gone`,
        });
        return undefined;
      }
      runtime = new PodRuntime(pod, this.#pool.allocate(), {
        core: this.#core,
        images: this.config.images,
        backoff: this.config.crashLoopBackoff ?? KUBELET_BACKOFF,
        apiServer: this.#apiServer,
        hostIP: HOST_IP,
        stateDir: this.config.stateDir,
        watchdog: this.#requireWatchdog(),
        uidRanges: this.#uidRanges,
        onChange: () => {
          this.#controller.enqueue(key);
        },
        onEvent: (event) => {
          this.events.emit('event', event);
        },
      });
      this.#runtimes.set(uid, runtime);
    }
    runtime.update(pod);
    try {
      await runtime.ensureStarted();
    } catch (error) {
      // The waiting reason is reported, then the key is retried with the queue's back-off
      // (a Secret or the root CA ConfigMap may appear later).
      if (error instanceof ContainerConfigError) this.#logger.info({ pod: key, err: error }, 'container cannot start yet');
      if (!runtime.zombie) await this.#patchStatus(pod, runtime.status(pod.status));
      throw error;
    }
    if (!runtime.zombie) await this.#patchStatus(pod, runtime.status(pod.status));
    return undefined;
  }

  async #maybeBind(pod: V1Pod): Promise<void> {
    if (pod.metadata?.deletionTimestamp !== undefined) return;
    const schedulers = this.config.schedulerNames ?? DEFAULT_SCHEDULER_NAMES;
    if (!schedulers.includes(pod.spec?.schedulerName ?? 'default-scheduler')) return;
    const labels = this.#registration.labels();
    const selector = pod.spec?.nodeSelector ?? {};
    if (Object.entries(selector).some(([label, value]) => labels[label] !== value)) return;
    const namespace = pod.metadata?.namespace ?? '';
    const name = pod.metadata?.name ?? '';
    try {
      await this.#core.createNamespacedPodBinding({
        namespace,
        name,
        body: {
          metadata: { name, namespace, uid: pod.metadata?.uid ?? '' },
          target: { apiVersion: 'v1', kind: 'Node', name: this.nodeName },
        },
      });
    } catch (error) {
      // Bound already (by us on a retry, or by another scheduler): nothing to do.
      if (!isConflict(error) && !isNotFound(error)) throw error;
    }
  }

  /** Graceful deletion: SIGTERM, grace, SIGKILL, final status, then delete with grace 0. */
  async #finishDeletion(pod: V1Pod, runtime: PodRuntime | undefined): Promise<void> {
    if (runtime !== undefined) {
      // The grace of this deletion (the API server's deletionGracePeriodSeconds: the delete's
      // own, else the Pod's terminationGracePeriodSeconds), read from the deleting Pod: the
      // runtime may still hold the Pod as it was before the delete.
      await runtime.terminate(deletionGraceSeconds(pod) * 1000);
      if (!runtime.zombie) await this.#patchStatus(pod, runtime.status(pod.status));
    }
    try {
      await this.#core.deleteNamespacedPod({
        namespace: pod.metadata?.namespace ?? '',
        name: pod.metadata?.name ?? '',
        // In the body, not the query: the API server ignores query options when a body is sent.
        body: { gracePeriodSeconds: 0, preconditions: { uid: pod.metadata?.uid ?? '' } },
      });
    } catch (error) {
      if (!isNotFound(error) && !isConflict(error)) throw error;
    }
    if (runtime !== undefined) await this.#teardown(runtime);
  }

  async #teardown(runtime: PodRuntime, graceMs?: number): Promise<void> {
    await runtime.terminate(graceMs);
    await runtime.dispose();
    this.#runtimes.delete(runtime.uid);
    this.#lastWritten.delete(runtime.uid);
    // The address is free again only now that no process of the Pod can still hold it.
    this.#pool.release(runtime.podIP);
  }

  async #patchStatus(pod: V1Pod, status: object): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    const serialized = serializeDates(status);
    const json = JSON.stringify(serialized);
    // Our own patch comes back as a watch event; an unchanged status is not written again.
    if (this.#lastWritten.get(uid) === json) return;
    try {
      await this.#core.patchNamespacedPodStatus(
        {
          namespace: pod.metadata?.namespace ?? '',
          name: pod.metadata?.name ?? '',
          // The UID makes the patch a precondition: it never lands on a same-named successor.
          body: { metadata: { uid }, status: serialized },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    } catch (error) {
      if (!isNotFound(error)) throw error;
      return;
    }
    this.#lastWritten.set(uid, json);
  }

  #requireWatchdog(): Watchdog {
    if (this.#watchdog === undefined) throw new LocalNodeError('the local node is not started');
    return this.#watchdog;
  }
}

/** Kubernetes times are RFC 3339 with second precision. */
function serializeDates(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString().replace(/\.\d{3}Z$/, 'Z');
  if (Array.isArray(value)) return value.map(serializeDates);
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, serializeDates(v)]));
  return value;
}

const silentLogger: LocalNodeLogger = { info: () => undefined, error: () => undefined, debug: () => undefined };

/** The grace period of a Pod's deletion, as the kubelet takes it. */
export function deletionGraceSeconds(pod: V1Pod): number {
  return pod.metadata?.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
}
