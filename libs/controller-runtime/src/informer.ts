import { ListWatch, Watch } from '@kubernetes/client-node';
import type { KubeConfig, KubernetesObject, V1ListMeta } from '@kubernetes/client-node';
import type { CacheReader } from './cache-reader.ts';
import type { ControllerLogger } from './controller.ts';
import { objectKey } from './object-key.ts';
import type { ReadonlyDeep } from './object-key.ts';
import { InformerIndexes } from './informer-index.ts';
import type { CachedObject, IndexFunction, InformerIndex } from './informer-index.ts';
import { exponentialFailureRateLimiter } from './rate-limiter.ts';
import type { ExponentialBackoffOptions } from './rate-limiter.ts';

export interface InformerEventHandler<T> {
  add?: (object: ReadonlyDeep<T>) => void;
  update?: (object: ReadonlyDeep<T>) => void;
  delete?: (object: ReadonlyDeep<T>) => void;
}

/** One page of a list: the API server's `limit` and `continue` (as client-node's list calls name it). */
export interface ListChunk {
  limit: number;
  _continue?: string;
}

/**
 * What a cache keeps of each object it receives, after stripManagedFields (client-go's
 * TransformFunc): a projection of the fields its controllers read, so that tens of
 * thousands of objects cost what those fields cost. Called on objects fresh from JSON,
 * once per list item and watch event; it may return the same object, changed, or a new one.
 */
export type Transform<T> = (object: T) => T;

/** One page of a list as the API server answers it (client-node's KubernetesListObject, for any cached kind). */
export interface ListPage<T> {
  metadata?: V1ListMeta;
  items: T[];
}

/**
 * How client-node's ListWatch holds a cached object: it reads only the metadata that
 * CachedObject names, so any kind is kept as it is, never converted.
 */
type Held<T> = T & KubernetesObject;

/** Objects per list page: a relist of tens of thousands never holds one huge response at once. */
export const LIST_PAGE_SIZE = 500;

export interface SharedInformerOptions<T extends CachedObject> {
  name: string;
  kubeConfig: KubeConfig;
  /** Watch path, e.g. `/apis/kruntimes.io/v1alpha1/namespaces/ns/runs`. */
  path: string;
  /** One page of the list; called with each `continue` token until the list is complete. */
  list: (chunk: ListChunk) => Promise<ListPage<T>>;
  transform?: Transform<T>;
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
export function stripManagedFields<T extends object>(object: T): T {
  const metadata = 'metadata' in object ? object.metadata : undefined;
  if (typeof metadata === 'object' && metadata !== null) Reflect.deleteProperty(metadata, 'managedFields');
  return object;
}

/** client-node's Watch, each event's object stripped and transformed before the cache sees it. */
class TransformingWatch<T extends CachedObject> extends Watch {
  readonly #transform: Transform<T>;

  constructor(kubeConfig: KubeConfig, transform: Transform<T>) {
    super(kubeConfig);
    this.#transform = transform;
  }

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
        // An ERROR event carries a Status, not an object of the resource: passed on as it is.
        const object = phase !== 'ERROR' && isObject(apiObj) ? this.#transform(stripManagedFields(apiObj as T)) : apiObj;
        callback(phase, object, watchObj);
      },
      done,
    );
  }
}

/**
 * The whole list, a page at a time, each page's items transformed before the next is
 * asked for. The list's resourceVersion is the first page's: every page of one list is
 * served from the same snapshot. An expired `continue` token fails the list, which the
 * informer restarts like any failed list.
 */
async function listAll<T extends CachedObject, K extends KubernetesObject>(
  page: (chunk: ListChunk) => Promise<ListPage<T>>,
  keep: (object: T) => K,
): Promise<ListPage<K>> {
  const items: K[] = [];
  let first: ListPage<T> | undefined;
  let token: string | undefined;
  // Bounded: each page is the server's answer to a token it gave; a server repeating one would loop.
  const seen = new Set<string>();
  do {
    const listed = await page({ limit: LIST_PAGE_SIZE, ...(token === undefined ? {} : { _continue: token }) });
    first ??= listed;
    for (const item of listed.items) items.push(keep(item));
    token = continueToken(listed);
    if (token !== undefined && token !== '' && seen.has(token)) throw new Error('the API server repeated a list continue token');
    if (token !== undefined) seen.add(token);
  } while (token !== undefined && token !== '');
  return { ...first, items };
}

/** The typed clients deserialize `continue` as `_continue`; the custom-objects client returns the JSON as it came. */
function continueToken(list: ListPage<unknown>): string | undefined {
  const metadata = list.metadata as { _continue?: string; continue?: string } | undefined;
  return metadata?._continue ?? metadata?.continue;
}

function indexName(index: { name: string } | string): string {
  return typeof index === 'string' ? index : index.name;
}

function isObject(value: unknown): value is CachedObject {
  return typeof value === 'object' && value !== null;
}

/**
 * A list-watch cache of one resource with event handlers. Wraps client-node's informer,
 * which relists on 410 Gone by itself but stops on any other error: this one restarts
 * it with backoff, so a restarted API server never leaves a controller blind. Cached
 * objects carry no managedFields (stripManagedFields) and are what the transform keeps;
 * lists are read a page at a time (LIST_PAGE_SIZE), each page transformed as it arrives.
 */
export class SharedInformer<T extends CachedObject> implements CacheReader<T> {
  readonly name: string;
  readonly #informer: ListWatch<Held<T>>;
  readonly #logger: ControllerLogger;
  readonly #restartLimiter;
  readonly #indexes = new InformerIndexes<ReadonlyDeep<T>>();
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
    const transform = options.transform ?? ((object: T) => object);
    const keep = (object: T): Held<T> => transform(stripManagedFields(object));
    // client-node's makeInformer, with the objects transformed on their way into the cache.
    const watch = new TransformingWatch(options.kubeConfig, keep);
    this.#informer = new ListWatch<Held<T>>(options.path, watch, () => listAll(options.list, keep), false, options.labelSelector);
    // The indexes first: every other handler sees them updated.
    this.#informer.on('add', (object) => {
      this.#indexes.upsert(object as ReadonlyDeep<T>);
    });
    this.#informer.on('update', (object) => {
      this.#indexes.upsert(object as ReadonlyDeep<T>);
    });
    this.#informer.on('delete', (object) => {
      this.#indexes.delete(object as ReadonlyDeep<T>);
    });
    this.#informer.on('error', (error: unknown) => {
      this.#errors += 1;
      this.#scheduleRestart(error);
    });
    this.#informer.on('connect', () => {
      this.#restartLimiter.forget(RESTART_KEY);
    });
  }

  /**
   * Files every cached object under the values the index gives, for byIndex: what the
   * cache holds at once, then every add, update and delete. Its values must be pure.
   */
  addIndex<K extends string>(index: InformerIndex<T, K>): void;
  addIndex(name: string, valuesOf: IndexFunction<ReadonlyDeep<T>>): void;
  addIndex(index: InformerIndex<T> | string, valuesOf?: IndexFunction<ReadonlyDeep<T>>): void {
    if (typeof index !== 'string') this.#indexes.add(index.name, index.valuesOf);
    else if (valuesOf !== undefined) this.#indexes.add(index, valuesOf);
  }

  /** The cached objects filed under `value` in the index (added with addIndex). */
  byIndex<K extends string>(index: InformerIndex<T, K>, value: K): ReadonlyDeep<T>[];
  byIndex(name: string, value: string): ReadonlyDeep<T>[];
  byIndex(index: InformerIndex<T> | string, value: string): ReadonlyDeep<T>[] {
    return this.#indexes.get(indexName(index), value);
  }

  /** How many cached objects are filed under `value`, without listing them. */
  countByIndex<K extends string>(index: InformerIndex<T, K>, value: K): number;
  countByIndex(name: string, value: string): number;
  countByIndex(index: InformerIndex<T> | string, value: string): number {
    return this.#indexes.count(indexName(index), value);
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
