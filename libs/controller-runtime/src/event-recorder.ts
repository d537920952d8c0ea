import { ApiException, CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { ConfigurationOptions, CoreV1Event, KubeConfig } from '@kubernetes/client-node';
import type { PolicyRule } from '@kruntimes/api';
import type { ControllerLogger } from './controller.ts';
import { decideEventWrite, eventKey, intervalKey } from './event-aggregation.ts';
import type { EventOccurrence, SeenEvent } from './event-aggregation.ts';
import { PerKeyInterval } from './per-key-interval.ts';
import { RecencyBoundedMap } from './recency-bounded-map.ts';

/** What a repeat changes on its Event (a merge patch). */
export interface EventRepeatPatch {
  count: number;
  lastTimestamp: Date;
}

/** The two writes of the typed core/v1 client the recorder makes (`CoreV1Api` is one). */
export interface EventWriter {
  createNamespacedEvent(request: { namespace: string; body: CoreV1Event }): Promise<CoreV1Event>;
  patchNamespacedEvent(
    request: { name: string; namespace: string; body: EventRepeatPatch },
    options?: ConfigurationOptions,
  ): Promise<CoreV1Event>;
}

export interface EventRecorderOptions {
  core: EventWriter;
  /** source.component and reportingComponent: the service (`kruntimes-scheduler`). */
  component: string;
  /** reportingInstance (a Pod name); the component when unset. */
  instance?: string;
  logger: ControllerLogger;
  now?: () => number;
  /** A repeat within this of its last occurrence is counted into its Event. */
  windowMs?: number;
  /** At most one write per object and reason per this long, the others dropped; none dropped when unset. */
  minIntervalMs?: number;
  /** Events remembered for counting repeats (the least recent forgotten first). */
  maxKeys?: number;
}

/** What the recorder writes: create an Event, and patch it to count a repeat. */
export const EVENT_RECORDER_RULES: readonly PolicyRule[] = [{ apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] }];

/** client-go's aggregation window (EventAggregator's maxIntervalInSeconds). */
export const DEFAULT_EVENT_WINDOW_MS = 10 * 60_000;
/** client-go's EventCorrelator cache size. */
const DEFAULT_MAX_KEYS = 4_096;

/**
 * The one way a kruntimes service records core/v1 Events, as client-go's EventRecorder:
 * a repeat within the window moves the count and lastTimestamp of its Event (a merge
 * patch) instead of creating another, memory is bounded by the number of keys, and writes
 * of one key are made one after the other so that a burst cannot create two Events. A
 * failed write is logged and never thrown: the status of the object is its record.
 */
export class EventRecorder<Reason extends string = string> {
  readonly #options: EventRecorderOptions;
  readonly #now: () => number;
  readonly #seen: RecencyBoundedMap<string, SeenEvent>;
  readonly #interval: PerKeyInterval | undefined;
  readonly #writing = new Map<string, Promise<boolean>>();

  constructor(options: EventRecorderOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#seen = new RecencyBoundedMap(options.maxKeys ?? DEFAULT_MAX_KEYS);
    this.#interval = options.minIntervalMs === undefined ? undefined : new PerKeyInterval(options.minIntervalMs);
  }

  /** A recorder writing through `kubeConfig`'s typed core/v1 client. */
  static forKubeConfig<R extends string = string>(kubeConfig: KubeConfig, options: Omit<EventRecorderOptions, 'core'>): EventRecorder<R> {
    return new EventRecorder<R>({ ...options, core: kubeConfig.makeApiClient(CoreV1Api) });
  }

  /** Records one occurrence. True once it is written (created or counted); false when dropped or refused. Never rejects. */
  event(occurrence: EventOccurrence<Reason>): Promise<boolean> {
    const nowMs = this.#now();
    if (this.#interval?.allow(intervalKey(occurrence), nowMs) === false) return Promise.resolve(false);
    const key = eventKey(occurrence);
    const previous = this.#writing.get(key) ?? Promise.resolve(true);
    const write = previous.then(() => this.#write(key, occurrence, nowMs));
    this.#writing.set(key, write);
    void write.finally(() => {
      if (this.#writing.get(key) === write) this.#writing.delete(key);
    });
    return write;
  }

  /** Waits for the writes under way (shutdown). */
  async flush(): Promise<void> {
    await Promise.all([...this.#writing.values()]);
  }

  async #write(key: string, occurrence: EventOccurrence, nowMs: number): Promise<boolean> {
    const decision = decideEventWrite(this.#seen.get(key), nowMs, this.#options.windowMs ?? DEFAULT_EVENT_WINDOW_MS);
    try {
      const written =
        decision.action === 'patch'
          ? await this.#countRepeat(occurrence, decision.name, decision.count, nowMs)
          : await this.#create(occurrence, nowMs);
      this.#seen.set(key, { name: written.metadata.name ?? '', count: written.count ?? 1, lastMs: nowMs });
      return true;
    } catch (error) {
      this.#seen.delete(key);
      const { namespace, name } = occurrence.regarding;
      this.#options.logger.error({ object: `${namespace}/${name}`, reason: occurrence.reason, err: error }, 'could not record an Event');
      return false;
    }
  }

  /** The repeat counted into its Event; a new one when that Event is gone (expired by the API server's event TTL). */
  async #countRepeat(occurrence: EventOccurrence, name: string, count: number, nowMs: number): Promise<CoreV1Event> {
    const { namespace } = occurrence.regarding;
    try {
      return await this.#options.core.patchNamespacedEvent(
        { name, namespace, body: { count, lastTimestamp: new Date(nowMs) } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    } catch (error) {
      if (!(error instanceof ApiException && error.code === 404)) throw error;
      return this.#create(occurrence, nowMs);
    }
  }

  #create(occurrence: EventOccurrence, nowMs: number): Promise<CoreV1Event> {
    const { regarding, type, reason, message } = occurrence;
    const { component, instance = component } = this.#options;
    const at = new Date(nowMs);
    return this.#options.core.createNamespacedEvent({
      namespace: regarding.namespace,
      body: {
        metadata: { generateName: `${regarding.name}.`, namespace: regarding.namespace },
        involvedObject: { ...regarding },
        reason,
        message,
        type,
        source: { component },
        reportingComponent: component,
        reportingInstance: instance,
        firstTimestamp: at,
        lastTimestamp: at,
        count: 1,
      },
    });
  }
}
