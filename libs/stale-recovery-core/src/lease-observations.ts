import type { V1Lease } from '@kubernetes/client-node';
import { RecencyBoundedMap, objectKey } from '@kruntimes/controller-runtime';
import type { LeaseObservation, ReadonlyDeep, SharedInformer } from '@kruntimes/controller-runtime';

/** More Pod Leases than any namespace set stale-recovery watches should hold; the oldest are dropped beyond it. */
const DEFAULT_MAX_LEASES = 50_000;

/**
 * When this process first saw each Pod Lease's current record, on its own monotonic
 * clock (client-go's observedTime): the record is the resourceVersion, which every write
 * of the Lease changes (a renewal, a new holder, a new report). Fed from the Lease
 * informer's events and consulted with the cached Lease at decision time; a deleted Lease
 * is forgotten. Bounded: beyond `maxLeases` the longest-unchanged record is dropped, and a
 * dropped or unknown record counts as seen just now (it looks alive for a full lease
 * duration, never expired early).
 */
export class LeaseObservations {
  readonly #now: () => number;
  /** namespace/name -> observation, oldest change first (an unchanged record is not set again). */
  readonly #seen: RecencyBoundedMap<string, LeaseObservation>;

  constructor(options: { now: () => number; maxLeases?: number }) {
    this.#now = options.now;
    this.#seen = new RecencyBoundedMap(Math.max(1, options.maxLeases ?? DEFAULT_MAX_LEASES));
  }

  /** The Lease as just seen (an informer add or update, or the cache at decision time): when its current record was first seen. */
  observe(lease: ReadonlyDeep<V1Lease>): LeaseObservation {
    const key = objectKey(lease);
    const record = leaseRecord(lease);
    const previous = this.#seen.get(key);
    if (previous?.record === record) return previous;
    const observed = { record, atMs: this.#now() };
    this.#seen.set(key, observed);
    return observed;
  }

  /** A deleted Lease. */
  forget(lease: ReadonlyDeep<V1Lease>): void {
    this.#seen.delete(objectKey(lease));
  }

  get size(): number {
    return this.#seen.size;
  }
}

/** What identifies one version of a Lease: its resourceVersion, else (objects not from the API) its holder record. */
function leaseRecord(lease: ReadonlyDeep<V1Lease>): string {
  const version = lease.metadata?.resourceVersion;
  if (version !== undefined && version !== '') return `rv:${version}`;
  const spec = lease.spec;
  return JSON.stringify([spec?.holderIdentity, spec?.renewTime, spec?.leaseTransitions, spec?.leaseDurationSeconds]);
}

/** Feeds `observations` from the Lease informer: every add and update is a version seen now; a delete forgets it. */
export function observeLeases(leases: Pick<SharedInformer<V1Lease>, 'addEventHandler'>, observations: LeaseObservations): void {
  leases.addEventHandler({
    add: (lease) => {
      observations.observe(lease);
    },
    update: (lease) => {
      observations.observe(lease);
    },
    delete: (lease) => {
      observations.forget(lease);
    },
  });
}
