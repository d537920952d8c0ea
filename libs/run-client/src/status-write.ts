import { isDeepStrictEqual } from 'node:util';
import type { KruntimesObject, ObjectClient, ReadonlyDeep } from './object-client.ts';

/**
 * The kinds whose status writeStatus writes: every kruntimes kind but Run, whose status
 * moves only through the state machine (writeTransition).
 */
export type StatusObject = KruntimesObject & { kind: 'Runtime' | 'RunInput' | 'RunSchedule' | 'ArtifactStore' };

/** The slice of a logger the writer needs: refusals are expected and logged at debug. */
export interface StatusWriteLogger {
  debug(object: object, message: string): void;
}

/**
 * A status write's outcome. Not written, and no error: Unchanged (nothing sent, the
 * status is that already); Conflict (the version decided from is behind the server's);
 * NotFound (the object is gone). After a Conflict the newer version's watch event, after
 * a NotFound the delete event, enqueues the same key, which decides again from fresh
 * data: a retry here would only add a second, slower one.
 */
export type StatusWrite<T> = { written: true; object: T } | { written: false; reason: 'Unchanged' | 'Conflict' | 'NotFound' };

/**
 * Replaces the status of `object` with `status`, fenced on its resourceVersion, unless the
 * two are semantically equal (sameStatus). The one status writer of every kind but Run.
 */
export async function writeStatus<T extends StatusObject>(
  client: Pick<ObjectClient<T>, 'replaceStatus'>,
  object: ReadonlyDeep<T>,
  status: ReadonlyDeep<NonNullable<T['status']>>,
  logger?: StatusWriteLogger,
): Promise<StatusWrite<T>> {
  if (sameStatus(object.status, status)) return { written: false, reason: 'Unchanged' };
  const written = await client.replaceStatus(object, status);
  if (written.ok) return { written: true, object: written.object };
  const { namespace = '', name = '' } = object.metadata;
  logger?.debug(
    { object: `${object.kind} ${namespace}/${name}`, reason: written.reason },
    'status write refused; its watch event reconciles again',
  );
  return { written: false, reason: written.reason };
}

/**
 * Semantic equality of two statuses, as the API server would store them: members set to
 * undefined are absent, the order of members does not matter, and no status is `{}`.
 */
export function sameStatus(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(normalised(a ?? {}), normalised(b ?? {}));
}

function normalised(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalised);
  if (value === null || typeof value !== 'object') return value;
  const members = Object.entries(value).filter(([, member]) => member !== undefined);
  return Object.fromEntries(members.map(([key, member]) => [key, normalised(member)]));
}
