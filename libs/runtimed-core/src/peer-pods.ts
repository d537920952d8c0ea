import { LABELS, POD_ANNOTATIONS } from '@kruntimes/api';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { InformerFactory, isPodReady } from '@kruntimes/controller-runtime';
import type { ControllerLogger, ReadonlyDeep, SharedInformer } from '@kruntimes/controller-runtime';

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

  /**
   * With `informers`, the Pod informer is the factory's (started and stopped with the
   * process's other watches); without, its own.
   */
  constructor(
    kubeConfig: KubeConfig,
    namespace: string,
    runtime: string,
    logger: ControllerLogger,
    informers = new InformerFactory({ kubeConfig, logger }),
  ) {
    this.#informer = informers.pods({ namespace, labelSelector: `${LABELS.runtime}=${runtime}`, name: 'pods' });
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

  /**
   * Calls `observe` on every change of the Pod with this UID (runtimed's own): whether the
   * autoscaler marked it for scale-down, and whether it is deleting.
   */
  watchOwn(uid: string, observe: (pod: { scaleDown: boolean; deleting: boolean }) => void): void {
    const seen = (pod: ReadonlyDeep<V1Pod>): void => {
      if (pod.metadata?.uid !== uid) return;
      observe({
        scaleDown: pod.metadata.annotations?.[POD_ANNOTATIONS.scaleDown] !== undefined,
        deleting: pod.metadata.deletionTimestamp !== undefined,
      });
    };
    this.#informer.addEventHandler({ add: seen, update: seen });
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
