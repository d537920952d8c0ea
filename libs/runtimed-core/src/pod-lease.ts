import { ApiException, CoordinationV1Api, V1MicroTime } from '@kubernetes/client-node';
import type { KubeConfig, V1Lease } from '@kubernetes/client-node';
import { LABELS } from '@kruntimes/api';
import type { PodIdentity } from './config.ts';

export interface PodLeaseOptions {
  kubeConfig: KubeConfig;
  pod: PodIdentity;
  runtime: string;
  durationSeconds: number;
  renewSeconds: number;
  logger: { error(object: object, message: string): void; debug(object: object, message: string): void };
  onRenewed?(ok: boolean): void;
}

/**
 * The liveness Lease of one Runtime Pod (ARCHITECTURE §9): `coordination.k8s.io` Lease
 * named after the Pod, held by the Pod UID (a reused Pod name never inherits it), owned
 * by the Pod (garbage-collected with it), renewed every `renewSeconds` for
 * `durationSeconds`. stale-recovery reads an expired one as evidence, never as proof.
 */
export class PodLease {
  readonly #options: PodLeaseOptions;
  readonly #api: CoordinationV1Api;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #renewing: Promise<void> | undefined;

  constructor(options: PodLeaseOptions) {
    this.#options = options;
    this.#api = options.kubeConfig.makeApiClient(CoordinationV1Api);
  }

  /** Renews once now (resolves when that first renewal was attempted), then on a timer. */
  async start(): Promise<void> {
    await this.#tick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#renewing;
  }

  async #tick(): Promise<void> {
    this.#renewing = this.renew().then(
      () => this.#options.onRenewed?.(true),
      (error: unknown) => {
        this.#options.onRenewed?.(false);
        this.#options.logger.error({ err: error, lease: this.#options.pod.name }, 'pod lease renewal failed; retrying at the next period');
      },
    );
    await this.#renewing;
    if (this.#stopped) return;
    this.#timer = setTimeout(() => void this.#tick(), this.#options.renewSeconds * 1000);
    this.#timer.unref();
  }

  /** One create-or-renew, fenced on resourceVersion (a 409 is retried at the next period). */
  async renew(): Promise<void> {
    const { pod, runtime, durationSeconds } = this.#options;
    // MicroTime: a plain Date serialises with milliseconds, which the API server refuses.
    const now = new V1MicroTime();
    let lease: V1Lease;
    try {
      lease = await this.#api.readNamespacedLease({ name: pod.name, namespace: pod.namespace });
    } catch (error) {
      if (!(error instanceof ApiException && error.code === 404)) throw error;
      await this.#api.createNamespacedLease({
        namespace: pod.namespace,
        body: {
          metadata: {
            name: pod.name,
            namespace: pod.namespace,
            labels: { [LABELS.runtime]: runtime, [LABELS.component]: 'runtimed' },
            ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: pod.name, uid: pod.uid }],
          },
          spec: { holderIdentity: pod.uid, leaseDurationSeconds: durationSeconds, acquireTime: now, renewTime: now, leaseTransitions: 0 },
        },
      });
      this.#options.logger.debug({ lease: pod.name }, 'pod lease created');
      return;
    }
    const spec = lease.spec ?? {};
    const mine = spec.holderIdentity === pod.uid;
    await this.#api.replaceNamespacedLease({
      name: pod.name,
      namespace: pod.namespace,
      body: {
        metadata: lease.metadata ?? {},
        spec: {
          holderIdentity: pod.uid,
          leaseDurationSeconds: durationSeconds,
          acquireTime: mine ? (spec.acquireTime ?? now) : now,
          renewTime: now,
          leaseTransitions: mine ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
        },
      },
    });
  }
}
