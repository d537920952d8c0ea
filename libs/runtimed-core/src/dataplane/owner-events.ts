import { API_GROUP_VERSION, EVENT_REASONS, RUN_KIND } from '@kruntimes/api';
import { CoreV1Api } from '@kubernetes/client-node';
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
/** Keys remembered before expired entries are pruned. */
const PRUNE_AT = 1_024;

/**
 * At most one `allow` per key per interval; memory stays bounded by pruning expired keys
 * (live keys are those allowed within the last interval, which a burst cannot grow much).
 */
export class PerKeyInterval {
  readonly #intervalMs: number;
  readonly #last = new Map<string, number>();

  constructor(intervalMs: number) {
    this.#intervalMs = intervalMs;
  }

  allow(key: string, nowMs: number): boolean {
    const last = this.#last.get(key);
    if (last !== undefined && nowMs - last < this.#intervalMs) return false;
    this.#last.set(key, nowMs);
    if (this.#last.size > PRUNE_AT) {
      for (const [other, at] of this.#last) if (nowMs - at >= this.#intervalMs) this.#last.delete(other);
    }
    return true;
  }

  get size(): number {
    return this.#last.size;
  }
}

/**
 * The `OwnerUnreachable` Warning Event on a Run whose owner this runtimed found stale or
 * unreachable (a contract with stale-recovery, which re-checks the Run at once). Written
 * off the request path (the invocation has already been answered 503) and at most once
 * per Run per 30 s, so a burst of invocations is one Event and one API write.
 */
export class OwnerUnreachableEvents {
  readonly #o: OwnerEventsOptions;
  readonly #core: CoreV1Api;
  readonly #now: () => number;
  readonly #limit: PerKeyInterval;
  readonly #pending = new Set<Promise<void>>();

  constructor(options: OwnerEventsOptions) {
    this.#o = options;
    this.#core = options.kubeConfig.makeApiClient(CoreV1Api);
    this.#now = options.now ?? Date.now;
    this.#limit = new PerKeyInterval(options.intervalMs ?? DEFAULT_INTERVAL_MS);
  }

  /** Records the Event unless one for this Run was recorded within the interval. Never throws. */
  report(run: RunRef, message: string): void {
    const now = this.#now();
    if (!this.#limit.allow(run.uid, now)) return;
    const write = this.#write(run, message, new Date(now)).finally(() => this.#pending.delete(write));
    this.#pending.add(write);
  }

  /** Waits for the Events being written (shutdown). */
  async flush(): Promise<void> {
    await Promise.all([...this.#pending]);
  }

  async #write(run: RunRef, message: string, at: Date): Promise<void> {
    const { namespace, podName, logger } = this.#o;
    try {
      await recordRunEvent(
        this.#core,
        { namespace, podName },
        run,
        { reason: EVENT_REASONS.ownerUnreachable, type: 'Warning', message },
        at,
      );
      logger.info({ runUID: run.uid, reason: EVENT_REASONS.ownerUnreachable }, 'recorded an OwnerUnreachable Event');
    } catch (error) {
      // Evidence only: stale-recovery finds a lost owner by itself, later.
      logger.warn({ runUID: run.uid, err: error }, 'could not record the OwnerUnreachable Event');
    }
  }
}

/** One Event about a Run, written by this runtimed (reportingInstance: its Pod). */
export async function recordRunEvent(
  core: CoreV1Api,
  source: { namespace: string; podName: string },
  run: RunRef,
  event: { reason: string; type: 'Normal' | 'Warning'; message: string },
  at: Date,
): Promise<void> {
  const { namespace, podName } = source;
  await core.createNamespacedEvent({
    namespace,
    body: {
      metadata: { generateName: `${run.name}.`, namespace },
      involvedObject: { apiVersion: API_GROUP_VERSION, kind: RUN_KIND, name: run.name, namespace, uid: run.uid },
      reason: event.reason,
      message: event.message,
      type: event.type,
      source: { component: 'runtimed' },
      reportingComponent: 'runtimed',
      reportingInstance: podName,
      firstTimestamp: at,
      lastTimestamp: at,
      count: 1,
    },
  });
}
