import type { DeleteOptions, KruntimesObject, ListOptions, MergePatch, ObjectApi, ReadonlyDeep } from '../object-client.ts';
import type { Refusal, WriteResult } from '../refusal.ts';
import { thaw } from '../fenced-write.ts';

/** The writes of ObjectClient. */
export type WriteVerb = 'create' | 'delete' | 'mergePatch' | 'replace' | 'replaceStatus';

/** What a write other than a create may be refused with. */
type FenceRefusal = 'NotFound' | 'Conflict';

/** One write a reconciler sent, with what the fake API server answered. */
export interface RecordedWrite {
  verb: WriteVerb;
  /** `namespace/name` of the object written. */
  key: string;
  /** What was sent: the status of replaceStatus, the body of create and replace, the patch, the delete options. */
  body: unknown;
  outcome: 'ok' | Refusal;
}

/**
 * An in-memory API server of one kruntimes kind for a reconciler's table test, behind
 * ObjectClient's calls (ObjectApi). It holds the live objects, fences every write that
 * carries a resourceVersion (or delete preconditions) on them as the API server does
 * (Conflict), answers NotFound for what it does not hold, and records every write with
 * its outcome. `refuse` makes one verb on one object answer a refusal whatever it holds.
 */
export class FakeObjectClient<T extends KruntimesObject> implements ObjectApi<T> {
  /** Every write sent, in order, accepted or refused. */
  readonly writes: RecordedWrite[] = [];
  readonly #live = new Map<string, T>();
  readonly #refusals = new Map<string, FenceRefusal>();
  #version = 100;

  /** `live`: the objects the API server holds (a resourceVersion is given to those without one). */
  constructor(live: readonly T[] = []) {
    for (const object of live) this.#store(structuredClone(object), object.metadata.resourceVersion);
  }

  /**
   * From now on, `verb` on the object `namespace/name` is answered with `reason` (a create
   * is refused by holding an object of its name: AlreadyExists).
   */
  refuse(verb: Exclude<WriteVerb, 'create'>, key: string, reason: FenceRefusal): void {
    this.#refusals.set(`${verb} ${key}`, reason);
  }

  /** The object as the fake API server holds it now. */
  live(namespace: string, name: string): T | undefined {
    const object = this.#live.get(`${namespace}/${name}`);
    return object === undefined ? undefined : structuredClone(object);
  }

  get(namespace: string, name: string): Promise<T | undefined> {
    return Promise.resolve(this.live(namespace, name));
  }

  list(namespace: string | undefined, options: ListOptions = {}): Promise<T[]> {
    if (options.labelSelector !== undefined || options.fieldSelector !== undefined) {
      throw new RangeError('FakeObjectClient.list applies no selector; filter the result in the test');
    }
    const all = [...this.#live.values()].map((object) => structuredClone(object));
    return Promise.resolve(namespace === undefined ? all : all.filter((object) => object.metadata.namespace === namespace));
  }

  create(namespace: string, body: ReadonlyDeep<T>): Promise<WriteResult<T, 'AlreadyExists'>> {
    const key = `${namespace}/${body.metadata.name ?? ''}`;
    if (this.#live.has(key)) return this.#refused('create', key, body, 'AlreadyExists');
    const object = thaw<T>(body);
    object.metadata = { ...object.metadata, namespace, uid: object.metadata.uid ?? `uid-${key}` };
    return this.#accepted('create', key, body, this.#store(object));
  }

  delete(namespace: string, name: string, options: DeleteOptions = {}): Promise<WriteResult<undefined>> {
    const key = `${namespace}/${name}`;
    const live = this.#live.get(key);
    const { uid, resourceVersion } = options.preconditions ?? {};
    const fenced =
      (uid !== undefined && uid !== live?.metadata.uid) ||
      (resourceVersion !== undefined && resourceVersion !== live?.metadata.resourceVersion);
    const refused = this.#refusals.get(`delete ${key}`) ?? (live === undefined ? 'NotFound' : fenced ? 'Conflict' : undefined);
    if (refused !== undefined) return this.#refused('delete', key, options, refused);
    this.#live.delete(key);
    return this.#accepted('delete', key, options, undefined);
  }

  mergePatch(namespace: string, name: string, patch: MergePatch<T>): Promise<WriteResult<T>> {
    const key = `${namespace}/${name}`;
    const live = this.#live.get(key);
    const fence = isRecord(patch) && isRecord(patch.metadata) ? patch.metadata : {};
    const refused = this.#writeRefusal('mergePatch', key, live, fence);
    if (refused !== undefined || live === undefined) return this.#refused('mergePatch', key, patch, refused ?? 'NotFound');
    // A JSON merge patch of a T is a T again: the API server's own claim, made after its schema check.
    return this.#accepted('mergePatch', key, patch, this.#store(mergePatched(live, patch) as T));
  }

  replace(object: ReadonlyDeep<T>): Promise<WriteResult<T>> {
    const key = `${object.metadata.namespace ?? ''}/${object.metadata.name ?? ''}`;
    const live = this.#live.get(key);
    const refused = this.#writeRefusal('replace', key, live, object.metadata);
    if (refused !== undefined || live === undefined) return this.#refused('replace', key, object, refused ?? 'NotFound');
    // The main resource's replace keeps the status: only the status subresource writes it.
    return this.#accepted('replace', key, object, this.#store({ ...thaw<T>(object), status: live.status }));
  }

  replaceStatus(object: ReadonlyDeep<T>, status: ReadonlyDeep<NonNullable<T['status']>>): Promise<WriteResult<T>> {
    const key = `${object.metadata.namespace ?? ''}/${object.metadata.name ?? ''}`;
    const live = this.#live.get(key);
    const refused = this.#writeRefusal('replaceStatus', key, live, object.metadata);
    if (refused !== undefined || live === undefined) return this.#refused('replaceStatus', key, status, refused ?? 'NotFound');
    return this.#accepted('replaceStatus', key, status, this.#store({ ...structuredClone(live), status: structuredClone(status) }));
  }

  /** A scripted refusal, NotFound, or Conflict when the write's UID or resourceVersion is not the live object's. */
  #writeRefusal(
    verb: WriteVerb,
    key: string,
    live: T | undefined,
    fence: { readonly uid?: unknown; readonly resourceVersion?: unknown },
  ): FenceRefusal | undefined {
    const scripted = this.#refusals.get(`${verb} ${key}`);
    if (scripted !== undefined) return scripted;
    if (live === undefined) return 'NotFound';
    const stale =
      (fence.uid !== undefined && fence.uid !== live.metadata.uid) ||
      (fence.resourceVersion !== undefined && fence.resourceVersion !== live.metadata.resourceVersion);
    return stale ? 'Conflict' : undefined;
  }

  /** Keeps the object as the next version (or the given one) and returns a copy of what is kept. */
  #store(object: T, resourceVersion?: string): T {
    this.#version += 1;
    object.metadata.resourceVersion = resourceVersion ?? String(this.#version);
    this.#live.set(`${object.metadata.namespace ?? ''}/${object.metadata.name ?? ''}`, object);
    return structuredClone(object);
  }

  #accepted<R>(verb: WriteVerb, key: string, body: unknown, object: R): Promise<{ ok: true; object: R }> {
    this.writes.push({ verb, key, body: structuredClone(body), outcome: 'ok' });
    return Promise.resolve({ ok: true, object });
  }

  #refused<R extends Refusal>(verb: WriteVerb, key: string, body: unknown, reason: R): Promise<{ ok: false; reason: R }> {
    this.writes.push({ verb, key, body: structuredClone(body), outcome: reason });
    return Promise.resolve({ ok: false, reason });
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** RFC 7386: members of the patch set, `null` removes, objects merge, anything else replaces. */
function mergePatched(target: unknown, patch: unknown): unknown {
  if (!isRecord(patch)) return structuredClone(patch);
  const merged: Record<string, unknown> = isRecord(target) ? structuredClone(target) : {};
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) Reflect.deleteProperty(merged, name);
    else merged[name] = mergePatched(merged[name], value);
  }
  return merged;
}
