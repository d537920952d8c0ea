import { CoordinationV1Api, V1MicroTime } from '@kubernetes/client-node';
import type { KubeConfig, V1Lease } from '@kubernetes/client-node';
import { LABELS, LEASE_ANNOTATIONS } from '@kruntimes/api';
import { RecencyBoundedMap } from '@kruntimes/controller-runtime';
import { isNotFound } from '@kruntimes/run-client';
import type { PodIdentity } from './config.ts';

/** One Run epoch as the Pod Lease reports it (the Pod is the Lease's holder). */
export interface RunRef {
  uid: string;
  attempt: number;
}

/** What the owner reports at each renewal (Pod Lease reporting contract). */
export interface LeaseRunReport {
  /** Registered functions and running tasks (every Run this process holds local state for). */
  held: readonly RunRef[];
  /** Epochs whose registration or execution this process confirmed stopped. */
  released: readonly RunRef[];
}

/** How often reportNow writes before it gives up (the reconcile that asked retries). */
const REPORT_TRIES = 3;

/** How many confirmed releases the Lease carries (the newest ones). */
export const MAX_RELEASED_RUNS = 256;

/** The Lease annotations for a report: JSON arrays of `{ uid, attempt }`, released bounded to the newest 256. */
export function leaseRunAnnotations(report: LeaseRunReport): Record<string, string> {
  const encode = (refs: readonly RunRef[]): string => JSON.stringify(refs.map(({ uid, attempt }) => ({ uid, attempt })));
  return {
    [LEASE_ANNOTATIONS.heldRuns]: encode(report.held),
    [LEASE_ANNOTATIONS.releasedRuns]: encode(report.released.slice(-MAX_RELEASED_RUNS)),
  };
}

/**
 * The epochs a process confirmed released, newest last, bounded: a Run released again
 * moves to the end, the oldest falls off past the bound.
 */
export class ReleasedRuns {
  readonly #refs: RecencyBoundedMap<string, RunRef>;

  constructor(max = MAX_RELEASED_RUNS) {
    this.#refs = new RecencyBoundedMap(max);
  }

  add(ref: RunRef): void {
    this.#refs.set(`${ref.uid}/${String(ref.attempt)}`, { uid: ref.uid, attempt: ref.attempt });
  }

  list(): RunRef[] {
    return this.#refs.values();
  }
}

export interface PodLeaseOptions {
  kubeConfig: KubeConfig;
  pod: PodIdentity;
  runtime: string;
  durationSeconds: number;
  renewSeconds: number;
  logger: { error(object: object, message: string): void; debug(object: object, message: string): void };
  onRenewed?(ok: boolean): void;
  /** What to report in the Lease annotations at each renewal (none when unset). */
  runs?(): LeaseRunReport;
  /**
   * The Pod's wall clock, written as acquireTime and renewTime (informational: readers
   * judge expiry by when they see the Lease change, so this clock may be off). Injectable
   * for tests of a skewed clock; default the system clock.
   */
  now?(): number;
}

/**
 * The liveness Lease of one Runtime Pod ("How recovery works" in docs/operations.md): `coordination.k8s.io` Lease
 * named after the Pod, held by the Pod UID (a reused Pod name never inherits it), owned
 * by the Pod (garbage-collected with it), renewed every `renewSeconds` for
 * `durationSeconds`. stale-recovery reads an expired one as evidence, never as proof, and
 * judges expiry by when it saw the Lease change, never by the renewTime written here.
 * Each renewal also writes which Run epochs this Pod holds and which it confirmed
 * released (LEASE_ANNOTATIONS), read by stale-recovery.
 */
export class PodLease {
  readonly #options: PodLeaseOptions;
  readonly #api: CoordinationV1Api;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #renewing: Promise<void> | undefined;
  /** A report asked for (reportNow) that has not started yet: later askers join it. */
  #report: Promise<void> | undefined;
  /** Local time (Date.now) at which the last successful renewal was sent. */
  #renewedAtMs: number | undefined;

  constructor(options: PodLeaseOptions) {
    this.#options = options;
    this.#api = options.kubeConfig.makeApiClient(CoordinationV1Api);
  }

  /** Renews once now (resolves when that first renewal was attempted), then on a timer. */
  async start(): Promise<void> {
    await this.#tick();
  }

  /**
   * When the Lease expires as this process last renewed it: counted from when that
   * renewal was sent (no later than when any reader saw it), so never later than the
   * expiry stale-recovery judges; undefined before the first successful renewal.
   * Upload grants expire no later than this.
   */
  expiresAtMs(): number | undefined {
    return this.#renewedAtMs === undefined ? undefined : this.#renewedAtMs + this.#options.durationSeconds * 1000;
  }

  /**
   * Writes the Lease now, with the report as it is when the write starts (a handover's
   * release before its status write): callers that ask before it started share it. Waits
   * for a renewal in flight first, and tries again on a conflict with it.
   */
  reportNow(): Promise<void> {
    this.#report ??= (async () => {
      await this.#renewing;
      this.#report = undefined;
      for (let tries = 1; ; tries++) {
        try {
          await this.renew();
          return;
        } catch (error) {
          if (tries >= REPORT_TRIES) throw error;
        }
      }
    })();
    return this.#report;
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
    const sentAtMs = Date.now();
    // MicroTime: a plain Date serialises with milliseconds, which the API server refuses.
    const now = new V1MicroTime(this.#options.now?.() ?? Date.now());
    const report = this.#options.runs?.();
    const annotations = report === undefined ? {} : leaseRunAnnotations(report);
    let lease: V1Lease;
    try {
      lease = await this.#api.readNamespacedLease({ name: pod.name, namespace: pod.namespace });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      await this.#api.createNamespacedLease({
        namespace: pod.namespace,
        body: {
          metadata: {
            name: pod.name,
            namespace: pod.namespace,
            labels: { [LABELS.runtime]: runtime, [LABELS.component]: 'runtimed' },
            annotations,
            ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: pod.name, uid: pod.uid }],
          },
          spec: { holderIdentity: pod.uid, leaseDurationSeconds: durationSeconds, acquireTime: now, renewTime: now, leaseTransitions: 0 },
        },
      });
      this.#renewedAtMs = sentAtMs;
      this.#options.logger.debug({ lease: pod.name }, 'pod lease created');
      return;
    }
    const spec = lease.spec ?? {};
    // The object was just read (not a cache): updating it in place is safe.
    const metadata = lease.metadata ?? {};
    metadata.annotations = { ...metadata.annotations, ...annotations };
    const mine = spec.holderIdentity === pod.uid;
    await this.#api.replaceNamespacedLease({
      name: pod.name,
      namespace: pod.namespace,
      body: {
        metadata,
        spec: {
          holderIdentity: pod.uid,
          leaseDurationSeconds: durationSeconds,
          acquireTime: mine ? (spec.acquireTime ?? now) : now,
          renewTime: now,
          leaseTransitions: mine ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
        },
      },
    });
    this.#renewedAtMs = sentAtMs;
  }
}
