import { LABELS } from '@kruntimes/api';
import { CoreV1Api } from '@kubernetes/client-node';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { SharedInformer, isPodReady } from '@kruntimes/controller-runtime';
import type { ControllerLogger } from '@kruntimes/controller-runtime';

export interface PeerPod {
  name: string;
  uid: string;
  /** Empty until the Pod has an address. */
  ip: string;
  ready: boolean;
  deleting: boolean;
}

/**
 * The watch-backed cache of the Pods of this Runtime: where each assigned Pod (by UID) can
 * be reached and whether it is ready or deleting. The invoke path and peer hops read it
 * instead of the API server; a Pod UID that is not here is a Pod that no longer exists.
 */
export class PeerPods {
  readonly #informer: SharedInformer<V1Pod>;

  constructor(kubeConfig: KubeConfig, namespace: string, runtime: string, logger: ControllerLogger) {
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const labelSelector = `${LABELS.runtime}=${runtime}`;
    this.#informer = new SharedInformer<V1Pod>({
      name: 'pods',
      kubeConfig,
      path: `/api/v1/namespaces/${namespace}/pods`,
      labelSelector,
      list: () => core.listNamespacedPod({ namespace, labelSelector }),
      logger,
    });
  }

  start(): Promise<void> {
    return this.#informer.start();
  }

  stop(): Promise<void> {
    return this.#informer.stop();
  }

  get hasSynced(): boolean {
    return this.#informer.hasSynced;
  }

  /** The Pod with exactly this UID (a same-named successor is a different Pod). */
  byUID(uid: string): PeerPod | undefined {
    const pod = this.#informer.list().find((candidate) => candidate.metadata?.uid === uid);
    if (pod === undefined) return undefined;
    return {
      name: pod.metadata?.name ?? '',
      uid,
      ip: pod.status?.podIP ?? '',
      ready: isPodReady(pod),
      deleting: pod.metadata?.deletionTimestamp !== undefined,
    };
  }
}
