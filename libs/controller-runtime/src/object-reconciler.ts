import type { ReconcileResult, Reconciler } from './controller.ts';
import type { CachedObject } from './informer-index.ts';
import { splitObjectKey } from './object-key.ts';
import type { ReadonlyDeep } from './object-key.ts';

/** Which object a key names: the key itself and its two parts (namespace '' for a cluster-scoped one). */
export interface ObjectRef {
  key: string;
  namespace: string;
  name: string;
}

/** The read an object reconciler needs of its cache (a SharedInformer's get). */
export interface ObjectCache<T> {
  get(name: string, namespace?: string): ReadonlyDeep<T> | undefined;
}

/** An object that may be being deleted, whatever its timestamps' type. */
type Deletable = CachedObject & { readonly metadata?: { readonly deletionTimestamp?: unknown } };

/**
 * Reconciles one object handed to it (controller-runtime's ObjectReconciler): the adapter
 * (asReconciler) has split the key, read the cache and dealt with an object that is gone.
 */
export interface ObjectReconciler<T> {
  /**
   * The object as cached: read-only, as every reader of the cache shares it (thaw a copy to
   * change it). Idempotent, as any Reconciler.
   */
  reconcile(object: ReadonlyDeep<T>, ref: ObjectRef, signal: AbortSignal): Promise<ReconcileResult | undefined>;
  /** The object is not in the cache, or is being deleted: forget what is kept about it. */
  gone?(ref: ObjectRef): void;
}

export interface AsReconcilerOptions {
  /**
   * Whether an object being deleted is reconciled (one that has a finalizer to remove, or
   * a state to end first) or counts as gone. Default: gone.
   */
  deleting?: 'reconcile' | 'gone';
}

/**
 * A key Reconciler from an ObjectReconciler (controller-runtime's AsReconciler): splits
 * the key, reads the object from the cache, and hands it over; a missing object, and by
 * default one being deleted, goes to `gone` instead and is not requeued. Its owned
 * objects go with it through their owner references, so nothing more is needed here.
 */
export function asReconciler<T extends Deletable>(
  cache: ObjectCache<T>,
  reconciler: ObjectReconciler<T>,
  options: AsReconcilerOptions = {},
): Reconciler {
  const reconcileDeleting = options.deleting === 'reconcile';
  return async (key, signal) => {
    const { namespace = '', name } = splitObjectKey(key);
    const ref: ObjectRef = { key, namespace, name };
    const object = cache.get(name, namespace);
    if (object === undefined || (!reconcileDeleting && isDeleting(object))) {
      reconciler.gone?.(ref);
      return undefined;
    }
    return reconciler.reconcile(object, ref, signal);
  };
}

function isDeleting(object: ReadonlyDeep<Deletable>): boolean {
  return object.metadata?.deletionTimestamp !== undefined;
}
