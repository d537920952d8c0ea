import type { ReadonlyDeep } from './object-client.ts';
import type { WriteResult } from './refusal.ts';

/**
 * A fenced write's result: the object written; or NotFound; or Conflict when the retries
 * were spent; or Refused with the caller's reason, when the version it decided on refused
 * the write (a state-machine refusal, a failed ownership check).
 */
export type FencedResult<T, E> = WriteResult<T> | { ok: false; reason: 'Refused'; error: E };

/** What to do with one version of the object: write it (fenced on its resourceVersion), or refuse. */
export type FencedStep<T, E> = { write(): Promise<WriteResult<T>> } | { refuse: E };

export interface FencedWrite<T, E> {
  /** Reads the live object; undefined when it is gone. */
  read(): Promise<T | undefined>;
  /**
   * A version believed current (an informer's, or the one a write just returned): decided on
   * first, without a read. As safe as a read: the write is fenced on its resourceVersion.
   */
  assumed?: ReadonlyDeep<T> | undefined;
  /** Pure: the write this version calls for, or why it refuses it. */
  decide(object: T): FencedStep<T, E>;
  /** Fresh reads after the first version, each after a Conflict or a refusal of a possibly stale version. Default 0. */
  retries?: number;
  /** Each Conflict, retried or not (for metrics). */
  onConflict?(): void;
}

/**
 * The one conflict policy of every read-check-write of a kruntimes object. Each cycle
 * takes a version (the assumed one first, then a fresh read), lets `decide` choose on it,
 * and writes fenced on that version's resourceVersion. A version that may be behind the
 * live object (the assumed one, or one whose write got Conflict) is followed by a fresh
 * read while `retries` last; a refusal by a version just read is final. With 0 retries a
 * Conflict is returned at once: the caller's watch brings the changed object back.
 */
export async function fencedWrite<T, E>(request: FencedWrite<T, E>): Promise<FencedResult<T, E>> {
  const retries = request.retries ?? 0;
  let assumed: T | undefined = request.assumed === undefined ? undefined : thaw<T>(request.assumed);
  for (let cycle = 0; ; cycle += 1) {
    const mayRetry = cycle < retries;
    const stale = assumed !== undefined;
    const object: T | undefined = assumed ?? (await request.read());
    assumed = undefined;
    if (object === undefined) return { ok: false, reason: 'NotFound' };
    const step = request.decide(object);
    if ('refuse' in step) {
      if (stale && mayRetry) continue;
      return { ok: false, reason: 'Refused', error: step.refuse };
    }
    const result = await step.write();
    if (result.ok || result.reason !== 'Conflict') return result;
    request.onConflict?.();
    if (!mayRetry) return result;
  }
}

/** A mutable copy of a (possibly frozen, cached) object, to decide on and write. */
export function thaw<T>(object: ReadonlyDeep<T>): T {
  return structuredClone(object) as T;
}
