import { ListWatch, Watch } from '@kubernetes/client-node';
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { ControllerLogger } from './controller.ts';
import { objectKey } from './object-key.ts';
import type { ReadonlyDeep } from './object-key.ts';
import { exponentialFailureRateLimiter } from './rate-limiter.ts';
import type { ExponentialBackoffOptions } from './rate-limiter.ts';

export interface InformerEventHandler<T> {
  add?: (object: ReadonlyDeep<T>) => void;
  update?: (object: ReadonlyDeep<T>) => void;
  delete?: (object: ReadonlyDeep<T>) => void;
}

export interface SharedInformerOptions<T extends KubernetesObject> {
  name: string;
  kubeConfig: KubeConfig;
  /** Watch path, e.g. `/apis/kruntimes.io/v1alpha1/namespaces/ns/runs`. */
  path: string;
  list: () => Promise<KubernetesListObject<T>>;
  labelSelector?: string;
  logger: ControllerLogger;
  /** Backoff of restarts after a list or watch error (other than 410 Gone, relisted at once). */
  restartBackoff?: ExponentialBackoffOptions;
}

const RESTART_KEY = 'restart';

/**
 * What a cache keeps of an object: all but `metadata.managedFields`, the API server's
 * server-side-apply bookkeeping (often as large as the rest of a small object, one entry per
 * writer). Nothing here reads it, and an update sent without it keeps the server's (like
 * client-go's TransformStripManagedFields). Objects are fresh from JSON: changed in place.
 */
export function stripManagedFields<T extends KubernetesObject>(object: T): T {
  if (object.metadata?.managedFields !== undefined) delete object.metadata.managedFields;
  return object;
}

/** client-node's Watch, each event's object stripped before the cache sees it. */
class StrippingWatch extends Watch {
  override watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    return super.watch(
      path,
      queryParams,
      (phase, apiObj: unknown, watchObj) => {
        callback(phase, isObject(apiObj) ? stripManagedFields(apiObj) : apiObj, watchObj);
      },
      done,
    );
  }
}

function isObject(value: unknown): value is KubernetesObject {
  return typeof value === 'object' && value !== null;
}

/**
 * A list-watch cache of one resource with event handlers. Wraps client-node's informer,
 * which relists on 410 Gone by itself but stops on any other error: this one restarts
 * it with backoff, so a restarted API server never leaves a controller blind. Cached
 * objects carry no managedFields (stripManagedFields).
 */
export class SharedInformer<T extends KubernetesObject> {
  readonly name: string;
  readonly #informer: ListWatch<T>;
  readonly #logger: ControllerLogger;
  readonly #restartLimiter;
  #restartTimer: NodeJS.Timeout | undefined;
  #started = false;
  #stopped = false;
  #synced = false;
  #errors = 0;
  readonly #syncWaiters: (() => void)[] = [];

  constructor(options: SharedInformerOptions<T>) {
    this.name = options.name;
    this.#logger = options.logger;
    this.#restartLimiter = exponentialFailureRateLimiter(options.restartBackoff ?? { baseDelayMs: 200, maxDelayMs: 30_000 });
    const list = async (): Promise<KubernetesListObject<T>> => {
      const listed = await options.list();
      for (const item of listed.items) stripManagedFields(item);
      return listed;
    };
    // client-node's makeInformer, with the objects stripped on their way into the cache.
    this.#informer = new ListWatch<T>(options.path, new StrippingWatch(options.kubeConfig), list, false, options.labelSelector);
    this.#informer.on('error', (error: unknown) => {
      this.#errors += 1;
      this.#scheduleRestart(error);
    });
    this.#informer.on('connect', () => {
      this.#restartLimiter.forget(RESTART_KEY);
    });
  }

  /** Handlers run synchronously on the watch's delivery path: enqueue, don't work. */
  addEventHandler(handler: InformerEventHandler<T>): void {
    const { add, update, delete: remove } = handler;
    if (add !== undefined)
      this.#informer.on('add', (object) => {
        add(object as ReadonlyDeep<T>);
      });
    if (update !== undefined)
      this.#informer.on('update', (object) => {
        update(object as ReadonlyDeep<T>);
      });
    if (remove !== undefined)
      this.#informer.on('delete', (object) => {
        remove(object as ReadonlyDeep<T>);
      });
  }

  /** Enqueue the key of every added, updated and deleted object (mapped by `keyOf`). */
  enqueueTo(enqueue: (key: string) => void, keyOf: (object: ReadonlyDeep<T>) => string | undefined = objectKey): void {
    const handle = (object: ReadonlyDeep<T>): void => {
      const key = keyOf(object);
      if (key !== undefined) enqueue(key);
    };
    this.addEventHandler({ add: handle, update: handle, delete: handle });
  }

  /**
   * Lists, starts watching, and resolves once the cache holds a complete list; if the
   * first list fails, it keeps retrying with backoff and resolves on the first success.
   */
  async start(): Promise<void> {
    if (!this.#started) {
      this.#started = true;
      await this.#startOnce();
    }
    // Read through methods: the fields change in event callbacks while start() awaits.
    if (this.hasSynced || this.#isStopped()) return;
    await new Promise<void>((resolve) => this.#syncWaiters.push(resolve));
  }

  /** client-node reports a failed list through the error event, not by rejecting start(). */
  async #startOnce(): Promise<void> {
    const errorsBefore = this.#errorCount();
    await this.#informer.start();
    if (this.#errorCount() === errorsBefore && !this.hasSynced) {
      this.#synced = true;
      for (const resolve of this.#syncWaiters.splice(0)) resolve();
    }
  }

  get hasSynced(): boolean {
    return this.#synced;
  }

  #errorCount(): number {
    return this.#errors;
  }

  #isStopped(): boolean {
    return this.#stopped;
  }

  get(name: string, namespace?: string): ReadonlyDeep<T> | undefined {
    return this.#informer.get(name, namespace) as ReadonlyDeep<T> | undefined;
  }

  list(namespace?: string): readonly ReadonlyDeep<T>[] {
    return this.#informer.list(namespace) as readonly ReadonlyDeep<T>[];
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#restartTimer);
    for (const resolve of this.#syncWaiters.splice(0)) resolve();
    await this.#informer.stop();
  }

  #scheduleRestart(error: unknown): void {
    if (this.#stopped) return;
    const delayMs = this.#restartLimiter.when(RESTART_KEY);
    this.#logger.error({ informer: this.name, err: error, delayMs }, 'list-watch failed; restarting');
    clearTimeout(this.#restartTimer);
    this.#restartTimer = setTimeout(() => {
      if (this.#stopped) return;
      this.#startOnce().catch((restartError: unknown) => {
        this.#errors += 1;
        this.#scheduleRestart(restartError);
      });
    }, delayMs);
    this.#restartTimer.unref();
  }
}
