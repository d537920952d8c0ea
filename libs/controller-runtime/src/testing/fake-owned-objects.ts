import { ApiException } from '@kubernetes/client-node';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { OwnedObjectWriter } from '../ensure-owned.ts';

/** One create or replace ensureOwned sent, with what the fake API server answered. */
export interface OwnedWrite {
  verb: 'create' | 'replace';
  /** `Kind namespace/name`. */
  object: string;
  outcome: 'ok' | 'AlreadyExists' | 'Conflict' | 'NotFound';
}

/**
 * An in-memory API server behind the calls ensureOwned makes (OwnedObjectWriter), for a
 * reconciler's table test: creates and replaces are kept (409 on a name taken or a stale
 * resourceVersion, 404 on a replace of nothing) and recorded. It serves no reads: a read
 * is what ensureOwned makes after a create met AlreadyExists, a row for its own tests.
 */
export class FakeOwnedObjects implements OwnedObjectWriter {
  readonly writes: OwnedWrite[] = [];
  readonly #held = new Map<string, KubernetesObject>();
  #version = 1000;

  /** The objects of `kind` the fake API server holds, as it stored them. */
  held(kind: string): KubernetesObject[] {
    return [...this.#held.values()].filter((object) => object.kind === kind).map((object) => structuredClone(object));
  }

  create<T extends KubernetesObject>(spec: T): Promise<T> {
    const object = nameOf(spec);
    if (this.#held.has(object)) return this.#refused('create', object, 409, 'AlreadyExists');
    const stored = structuredClone(spec);
    (stored.metadata ??= {}).uid = `uid-${object}`;
    return this.#accepted('create', object, stored);
  }

  replace<T extends KubernetesObject>(spec: T): Promise<T> {
    const object = nameOf(spec);
    const live = this.#held.get(object);
    if (live === undefined) return this.#refused('replace', object, 404, 'NotFound');
    if (spec.metadata?.resourceVersion !== live.metadata?.resourceVersion) return this.#refused('replace', object, 409, 'Conflict');
    const stored = structuredClone(spec);
    // The API server keeps the UID it gave; a replace cannot change it.
    (stored.metadata ??= {}).uid = live.metadata?.uid ?? `uid-${object}`;
    return this.#accepted('replace', object, stored);
  }

  read(): Promise<never> {
    return Promise.reject(new RangeError('FakeOwnedObjects serves no reads'));
  }

  #accepted<T extends KubernetesObject>(verb: OwnedWrite['verb'], object: string, stored: T): Promise<T> {
    this.#version += 1;
    (stored.metadata ??= {}).resourceVersion = String(this.#version);
    this.#held.set(object, stored);
    this.writes.push({ verb, object, outcome: 'ok' });
    return Promise.resolve(structuredClone(stored));
  }

  #refused(verb: OwnedWrite['verb'], object: string, code: number, outcome: OwnedWrite['outcome']): Promise<never> {
    this.writes.push({ verb, object, outcome });
    return Promise.reject(new ApiException(code, outcome, {}, {}));
  }
}

function nameOf(object: KubernetesObject): string {
  return `${object.kind ?? ''} ${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
}
