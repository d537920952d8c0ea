import { arch, cpus, release, totalmem } from 'node:os';
import { CoordinationV1Api, CoreV1Api, PatchStrategy, setHeaderOptions, V1MicroTime } from '@kubernetes/client-node';
import type { KubeConfig, V1Lease } from '@kubernetes/client-node';
import { isConflict, isNotFound } from './api-objects.ts';

const LEASE_NAMESPACE = 'kube-node-lease';
export const MAX_PODS = 253;

/**
 * The Node object and its heartbeat. The Node's Lease in `kube-node-lease` is what
 * kube-controller-manager's node lifecycle controller watches: it is renewed every
 * quarter of its duration (kubelet: 40 s lease, 10 s renew). The Ready condition is
 * posted at registration and refreshed with every fourth renewal.
 */
export class NodeRegistration {
  readonly nodeName: string;
  readonly #core: CoreV1Api;
  readonly #coordination: CoordinationV1Api;
  readonly #leaseDurationSeconds: number;
  readonly #hostIP: string;
  readonly #kubeletPort: () => number;
  #timer: NodeJS.Timeout | undefined;
  #renewals = 0;
  #uid = '';

  /** `kubeletPort`: where the node serves the kubelet endpoint on hostIP (known once it listens); 0 for none. */
  constructor(config: KubeConfig, options: { nodeName: string; leaseDurationSeconds: number; hostIP: string; kubeletPort: () => number }) {
    this.nodeName = options.nodeName;
    this.#core = config.makeApiClient(CoreV1Api);
    this.#coordination = config.makeApiClient(CoordinationV1Api);
    this.#leaseDurationSeconds = options.leaseDurationSeconds;
    this.#hostIP = options.hostIP;
    this.#kubeletPort = options.kubeletPort;
  }

  labels(): Record<string, string> {
    return {
      'kubernetes.io/hostname': this.nodeName,
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': nodeArch(),
      'kruntimes.io/local-node': 'true',
    };
  }

  async register(onRenewError: (error: unknown) => void): Promise<void> {
    try {
      const node = await this.#core.createNode({ body: { metadata: { name: this.nodeName, labels: this.labels() } } });
      this.#uid = node.metadata?.uid ?? '';
    } catch (error) {
      if (!isConflict(error)) throw error;
      // Re-registration after a restart of the agent: the Node is ours already.
      this.#uid = (await this.#core.readNode({ name: this.nodeName })).metadata?.uid ?? '';
    }
    await this.#postStatus();
    await this.#renewLease();
    const periodMs = (this.#leaseDurationSeconds * 1000) / 4;
    this.#timer = setInterval(() => {
      this.#renewals += 1;
      const work = this.#renewals % 4 === 0 ? Promise.all([this.#renewLease(), this.#postStatus()]) : this.#renewLease();
      work.catch(onRenewError);
    }, periodMs);
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async deleteNode(): Promise<void> {
    try {
      await this.#core.deleteNode({ name: this.nodeName });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }

  async #postStatus(): Promise<void> {
    const now = new Date();
    const condition = (type: string, status: string, reason: string, message: string): object => ({
      type,
      status,
      reason,
      message,
      lastHeartbeatTime: now,
      lastTransitionTime: now,
    });
    const resources = { cpu: String(cpus().length), memory: `${Math.floor(totalmem() / 1024)}Ki`, pods: String(MAX_PODS) };
    const body = {
      status: {
        conditions: [
          condition('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'local node agent'),
          condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'local node agent'),
          condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'local node agent'),
          condition('Ready', 'True', 'KubeletReady', 'local node agent is posting ready status'),
        ],
        // kube-apiserver dials the InternalIP (--kubelet-preferred-address-types=InternalIP), never the name.
        addresses: [
          { type: 'InternalIP', address: this.#hostIP },
          { type: 'Hostname', address: this.nodeName },
        ],
        // The field is `Port` in the API. Without an endpoint, 0 (kube-apiserver would try 10250).
        daemonEndpoints: { kubeletEndpoint: { Port: this.#kubeletPort() } },
        capacity: resources,
        allocatable: resources,
        nodeInfo: {
          machineID: this.nodeName,
          systemUUID: this.nodeName,
          bootID: this.#uid,
          kernelVersion: release(),
          osImage: 'kruntimes local node',
          containerRuntimeVersion: 'local-process://1',
          kubeletVersion: 'v0.0.0-local-node',
          kubeProxyVersion: '',
          operatingSystem: 'linux',
          architecture: nodeArch(),
        },
      },
    };
    await this.#core.patchNodeStatus({ name: this.nodeName, body }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  }

  async #renewLease(): Promise<void> {
    const spec = { holderIdentity: this.nodeName, leaseDurationSeconds: this.#leaseDurationSeconds, renewTime: new V1MicroTime() };
    let lease: V1Lease;
    try {
      lease = await this.#coordination.readNamespacedLease({ namespace: LEASE_NAMESPACE, name: this.nodeName });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      await this.#coordination.createNamespacedLease({
        namespace: LEASE_NAMESPACE,
        body: {
          metadata: {
            name: this.nodeName,
            // Garbage-collected with the Node, as the kubelet's lease is.
            ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: this.nodeName, uid: this.#uid }],
          },
          spec,
        },
      });
      return;
    }
    await this.#coordination.replaceNamespacedLease({
      namespace: LEASE_NAMESPACE,
      name: this.nodeName, // eslint-disable-next-line @typescript-eslint/no-misused-spread -- plain data: the client serialises fields, not prototypes
      body: { ...lease, spec: { ...lease.spec, ...spec } },
    });
  }
}

function nodeArch(): string {
  const a = arch();
  return a === 'x64' ? 'amd64' : a;
}
