import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { API_GROUP, API_VERSION } from '@kruntimes/api';
import type { ObjectMeta, ReadonlyDeep } from '@kruntimes/api';
import { asWriteResult } from './refusal.ts';
import type { WriteResult } from './refusal.ts';

/** Any kruntimes object: a namespaced custom resource with a spec and a status subresource. */
export interface KruntimesObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec: unknown;
  status?: unknown;
}

export type { ReadonlyDeep };

/** A JSON merge patch (RFC 7386) of T: members to set, `null` to remove. */
export type MergePatch<T> = T extends readonly unknown[] ? T : T extends object ? { [K in keyof T]?: MergePatch<T[K]> | null } : T;

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
}

export interface DeleteOptions {
  /** The delete is refused (Conflict) unless the live object still has this UID / resourceVersion. */
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  gracePeriodSeconds?: number;
}

/**
 * ObjectClient's calls as a type: what a reconciler takes, so that a test hands it an
 * in-memory client (`@kruntimes/run-client/testing`) where the process hands it the real one.
 */
export type ObjectApi<T extends KruntimesObject> = Pick<
  ObjectClient<T>,
  'get' | 'list' | 'create' | 'delete' | 'mergePatch' | 'replace' | 'replaceStatus'
>;

/**
 * get, list, create, delete, merge patch, replace and status replace of one kruntimes kind.
 * Reads give `undefined` for NotFound; writes give a WriteResult naming the refusals the
 * caller must handle; every other failure is thrown. Every write that carries
 * `metadata.resourceVersion` (replace, replaceStatus, a patch that sets it) is fenced on
 * it: the API server refuses it with Conflict when the live object changed since.
 */
export class ObjectClient<T extends KruntimesObject> {
  readonly #api: CustomObjectsApi;
  readonly #plural: string;

  constructor(kubeConfig: KubeConfig, plural: string) {
    this.#api = kubeConfig.makeApiClient(CustomObjectsApi);
    this.#plural = plural;
  }

  /** The object, or undefined when it does not exist. */
  async get(namespace: string, name: string): Promise<T | undefined> {
    const result = await asWriteResult('get', ['NotFound'], () => this.#api.getNamespacedCustomObject({ ...this.#in(namespace), name }));
    return result.ok ? (result.object as T) : undefined;
  }

  /** The objects of one namespace, or of all namespaces when `namespace` is undefined. */
  async list(namespace: string | undefined, options: ListOptions = {}): Promise<T[]> {
    const answer = (await (namespace === undefined
      ? this.#api.listClusterCustomObject({ group: API_GROUP, version: API_VERSION, plural: this.#plural, ...options })
      : this.#api.listNamespacedCustomObject({ ...this.#in(namespace), ...options }))) as { items?: T[] };
    return answer.items ?? [];
  }

  async create(namespace: string, body: ReadonlyDeep<T>): Promise<WriteResult<T, 'AlreadyExists'>> {
    return asWriteResult(
      'create',
      ['AlreadyExists'],
      async () => (await this.#api.createNamespacedCustomObject({ ...this.#in(namespace), body })) as T,
    );
  }

  /**
   * Deletes the object; Conflict only with preconditions. Preconditions go in a
   * DeleteOptions body, and then the other options too: the API server ignores the query
   * options of a delete that has a body.
   */
  async delete(namespace: string, name: string, options: DeleteOptions = {}): Promise<WriteResult<undefined>> {
    const { preconditions, propagationPolicy, gracePeriodSeconds } = options;
    const given = {
      ...(propagationPolicy === undefined ? {} : { propagationPolicy }),
      ...(gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds }),
    };
    return asWriteResult('delete', ['NotFound', 'Conflict'], async () => {
      await this.#api.deleteNamespacedCustomObject({
        ...this.#in(namespace),
        name,
        ...(preconditions === undefined ? given : { body: { preconditions, ...given } }),
      });
      return undefined;
    });
  }

  /** A JSON merge patch of the object (a `metadata.resourceVersion` in it fences it). */
  async mergePatch(namespace: string, name: string, patch: MergePatch<T>): Promise<WriteResult<T>> {
    return asWriteResult('patch', ['NotFound', 'Conflict'], async () => {
      const written: unknown = await this.#api.patchNamespacedCustomObject(
        { ...this.#in(namespace), name, body: patch },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      return written as T;
    });
  }

  /** Replaces the object (not its status), fenced on its `metadata.resourceVersion`. */
  async replace(object: ReadonlyDeep<T>): Promise<WriteResult<T>> {
    const { name = '', namespace = '' } = object.metadata;
    return asWriteResult(
      'update',
      ['NotFound', 'Conflict'],
      async () => (await this.#api.replaceNamespacedCustomObject({ ...this.#in(namespace), name, body: object })) as T,
    );
  }

  /**
   * Replaces the status of `object`, fenced on its resourceVersion and UID. Only the
   * identity, the spec and the new status are sent: the status subresource ignores the rest.
   */
  async replaceStatus(object: ReadonlyDeep<T>, status: ReadonlyDeep<NonNullable<T['status']>>): Promise<WriteResult<T>> {
    const { name = '', namespace = '', uid, resourceVersion } = object.metadata;
    const body = {
      apiVersion: object.apiVersion,
      kind: object.kind,
      metadata: { name, namespace, uid, resourceVersion },
      spec: object.spec,
      status,
    };
    return asWriteResult(
      'update',
      ['NotFound', 'Conflict'],
      async () => (await this.#api.replaceNamespacedCustomObjectStatus({ ...this.#in(namespace), name, body })) as T,
    );
  }

  #in(namespace: string): { group: string; version: string; namespace: string; plural: string } {
    return { group: API_GROUP, version: API_VERSION, namespace, plural: this.#plural };
  }
}
