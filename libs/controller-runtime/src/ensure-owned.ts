import { ApiException } from '@kubernetes/client-node';
import type { KubernetesObject, KubernetesObjectApi } from '@kubernetes/client-node';
import type { ControllerLogger } from './controller.ts';
import type { ReadonlyDeep } from './object-key.ts';

/** The object whose controller owner reference an owned object must carry. */
export interface ControllerOwner {
  kind: string;
  uid: string;
}

/** What an owned object should be, and how to tell whether the one there already is. */
export interface DesiredObject<T extends KubernetesObject> {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  /** Whether the current object needs no write. */
  upToDate(current: ReadonlyDeep<T>): boolean;
  /** Why the current object cannot be replaced in place (a field the API server never changes, such as a Secret's type). */
  immutable?(current: ReadonlyDeep<T>): string | undefined;
  /**
   * The object to create (no current one) or to replace the current one with. Called only when one is written, so a
   * costly object (a freshly issued certificate) is made only then; ensureOwned sets the resourceVersion.
   */
  build(current: ReadonlyDeep<T> | undefined): T | Promise<T>;
}

/** An object that names its kind and where it lives. */
export interface IdentifiedObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; annotations?: Record<string, string> };
}

/** Why an object is left as it is: another controller's, or changed only by deleting it. */
export type OwnedRefusal = 'NotControlled' | 'Immutable';

export type OwnedPlan =
  | { action: 'create' }
  | { action: 'keep' }
  | { action: 'replace'; resourceVersion: string }
  | { action: 'refuse'; reason: OwnedRefusal; message: string };

export type EnsureOwnedResult =
  | { outcome: 'created' | 'replaced' | 'unchanged' }
  /** The create answered 409 with an object of this owner: its own create, not in the cache yet. */
  | { outcome: 'exists' }
  /** The replace answered 409: it was decided from an older version, whose successor's watch event reconciles again. */
  | { outcome: 'fenced' }
  | { outcome: 'refused'; reason: OwnedRefusal; message: string };

/** The calls ensureOwned makes of a KubernetesObjectApi. */
export type OwnedObjectWriter = Pick<KubernetesObjectApi, 'create' | 'read' | 'replace'>;

export interface EnsureOwnedRequest<T extends KubernetesObject> {
  client: OwnedObjectWriter;
  logger: ControllerLogger;
  owner: ControllerOwner;
  /** The object as the informer cache has it; undefined when the cache has none. */
  cached: ReadonlyDeep<T> | undefined;
  desired: DesiredObject<T>;
}

/**
 * What to do about an owned object, from the cached one: create it when there is none; never adopt (nor change) one
 * whose controller is not the owner; keep it when up to date; else replace it, fenced on the version the decision read.
 */
export function planOwned<T extends KubernetesObject>(
  current: ReadonlyDeep<T> | undefined,
  owner: ControllerOwner,
  desired: DesiredObject<T>,
): OwnedPlan {
  if (current === undefined) return { action: 'create' };
  if (!isControlledBy(current, owner)) return { action: 'refuse', reason: 'NotControlled', message: notControlled(desired, owner) };
  if (desired.upToDate(current)) return { action: 'keep' };
  const immutable = desired.immutable?.(current);
  if (immutable !== undefined) return { action: 'refuse', reason: 'Immutable', message: immutable };
  return { action: 'replace', resourceVersion: current.metadata?.resourceVersion ?? '' };
}

/**
 * The one create-or-update of the objects a controller owns. A create that answers 409 means the cache has not seen
 * the object yet: only a read tells whether it is ours (our own create) or another's (refused, never adopted).
 */
export async function ensureOwned<T extends KubernetesObject>(request: EnsureOwnedRequest<T>): Promise<EnsureOwnedResult> {
  const { client, owner, desired } = request;
  const plan = planOwned(request.cached, owner, desired);
  switch (plan.action) {
    case 'keep':
      return { outcome: 'unchanged' };
    case 'refuse':
      return { outcome: 'refused', reason: plan.reason, message: plan.message };
    case 'create':
      try {
        await client.create(await desired.build(undefined));
        return { outcome: 'created' };
      } catch (error) {
        if (!isConflict(error)) throw error;
        const current = await client.read<T>({
          apiVersion: desired.apiVersion,
          kind: desired.kind,
          metadata: { namespace: desired.namespace, name: desired.name },
        });
        return isControlledBy(current, owner)
          ? { outcome: 'exists' }
          : { outcome: 'refused', reason: 'NotControlled', message: notControlled(desired, owner) };
      }
    case 'replace': {
      // A copy: build may hand out the same desired object every time.
      const object = structuredClone(await desired.build(request.cached));
      (object.metadata ??= {}).resourceVersion = plan.resourceVersion;
      try {
        await client.replace(object);
        return { outcome: 'replaced' };
      } catch (error) {
        if (!isConflict(error)) throw error;
        request.logger.debug(
          { object: `${desired.kind} ${desired.namespace}/${desired.name}` },
          'write fenced out by a newer version; its watch event will reconcile again',
        );
        return { outcome: 'fenced' };
      }
    }
  }
}

/**
 * The common case: `desired` carries in `annotation` a hash of the spec it was made from, so an object whose
 * annotation differs is replaced. `merge` keeps what the API server fills in and never lets change (a Service's
 * clusterIP).
 */
export function specHashed<T extends KubernetesObject>(
  desired: T & IdentifiedObject,
  annotation: string,
  merge: (desired: T & IdentifiedObject, current: ReadonlyDeep<T>) => T = (object) => object,
): DesiredObject<T> {
  const hash = desired.metadata.annotations?.[annotation];
  return {
    apiVersion: desired.apiVersion,
    kind: desired.kind,
    namespace: desired.metadata.namespace,
    name: desired.metadata.name,
    upToDate: (current) => current.metadata?.annotations?.[annotation] === hash,
    build: (current) => (current === undefined ? desired : merge(desired, current)),
  };
}

function isControlledBy(object: ReadonlyDeep<KubernetesObject>, owner: ControllerOwner): boolean {
  return object.metadata?.ownerReferences?.some((ref) => ref.controller === true && ref.uid === owner.uid) === true;
}

function notControlled(desired: Pick<DesiredObject<KubernetesObject>, 'kind' | 'namespace' | 'name'>, owner: ControllerOwner): string {
  const { kind, namespace, name } = desired;
  return `${kind} ${namespace}/${name} exists and is not controlled by this ${owner.kind}; rename the ${owner.kind} or remove the ${kind}`;
}

function isConflict(error: unknown): boolean {
  return error instanceof ApiException && error.code === 409;
}
