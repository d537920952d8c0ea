import { API_GROUP_VERSION, EVENT_REASONS, RUN_KIND } from '@kruntimes/api';
import { EventRecorder } from '@kruntimes/controller-runtime';
import type { InvolvedObject } from '@kruntimes/controller-runtime';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';

export interface OwnerEventsOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  /** This runtimed's Pod name (reportingInstance). */
  podName: string;
  logger: Logger;
  /** At most one Event per Run per this long. */
  intervalMs?: number;
  now?: () => number;
}

export interface RunRef {
  name: string;
  uid: string;
}

const DEFAULT_INTERVAL_MS = 30_000;

/** A Run of `namespace` as the object of an Event. */
export function runRegarding(namespace: string, run: RunRef): InvolvedObject {
  return { apiVersion: API_GROUP_VERSION, kind: RUN_KIND, name: run.name, namespace, uid: run.uid };
}

/**
 * The `OwnerUnreachable` Warning Event on a Run whose owner this runtimed found stale or
 * unreachable (a contract with stale-recovery, which re-checks the Run at once). Written
 * off the request path (the invocation has already been answered 503) and at most once
 * per Run per 30 s, so a burst of invocations is one Event and one API write. Each
 * interval's is a new Event rather than a repeat counted into the last one: the window
 * equals the interval, so the time of the latest refusal is an Event's creation.
 */
export class OwnerUnreachableEvents {
  readonly #o: OwnerEventsOptions;
  readonly #recorder: EventRecorder;

  constructor(options: OwnerEventsOptions) {
    this.#o = options;
    const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
    this.#recorder = EventRecorder.forKubeConfig(options.kubeConfig, {
      component: 'runtimed',
      instance: options.podName,
      logger: options.logger,
      minIntervalMs: intervalMs,
      windowMs: intervalMs,
      ...(options.now === undefined ? {} : { now: options.now }),
    });
  }

  /** Records the Event unless one for this Run was recorded within the interval. Never throws. */
  report(run: RunRef, message: string): void {
    const { namespace, logger } = this.#o;
    const occurrence = {
      regarding: runRegarding(namespace, run),
      type: 'Warning',
      reason: EVENT_REASONS.ownerUnreachable,
      message,
    } as const;
    void this.#recorder.event(occurrence).then((written) => {
      // Evidence only when it fails (logged by the recorder): stale-recovery finds a lost owner by itself, later.
      if (written) logger.info({ runUID: run.uid, reason: EVENT_REASONS.ownerUnreachable }, 'recorded an OwnerUnreachable Event');
    });
  }

  /** Waits for the Events being written (shutdown). */
  async flush(): Promise<void> {
    await this.#recorder.flush();
  }
}
