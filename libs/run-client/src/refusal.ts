import { ApiException } from '@kubernetes/client-node';

/**
 * A write the API server refused in a way the caller is expected to handle, as a value
 * (the convention of this lib, like client-go's `apierrors.IsNotFound/IsConflict`, but
 * typed): `NotFound`, the object (or its namespace) is gone; `Conflict`, the
 * resourceVersion (or UID) the write was fenced on is no longer the live one;
 * `AlreadyExists`, a create found the name taken. Every other failure is thrown as the
 * client's error.
 */
export type Refusal = 'NotFound' | 'Conflict' | 'AlreadyExists';

/** A write's result: the object as the API server stored it, or the refusal (with its error, for messages and causes). */
export type WriteResult<T, R extends Refusal = 'NotFound' | 'Conflict'> = { ok: true; object: T } | Refused<R>;

export interface Refused<R extends Refusal> {
  ok: false;
  reason: R;
  /** The API server's answer; absent when a read, not a write, found the object gone. */
  error?: ApiException<unknown>;
}

/** The verbs of the API; their refusals differ: a create's 409 means the name is taken, any other write's that its fence failed. */
export type ApiVerb = 'get' | 'create' | 'update' | 'patch' | 'delete';

/** The HTTP status of an API error, or undefined when the request got no answer (or the error is not one). */
export function apiStatus(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

/** The API server answered NotFound (404). */
export function isNotFound(error: unknown): boolean {
  return apiStatus(error) === 404;
}

/** The API server answered Conflict (409): a failed resourceVersion/UID precondition, or a name taken on create. */
export function isConflict(error: unknown): boolean {
  return apiStatus(error) === 409;
}

/**
 * The API server answered and refused (4xx): the write certainly did not happen. Anything
 * else (5xx, a timeout, a reset connection) leaves its outcome unknown.
 */
export function isDefiniteRefusal(error: unknown): boolean {
  const status = apiStatus(error);
  return status !== undefined && status >= 400 && status < 500;
}

/** Which refusal an HTTP status means for a verb, or undefined when it is no handled refusal. */
export function refusalFor(verb: ApiVerb, status: number | undefined): Refusal | undefined {
  if (status === 404) return 'NotFound';
  if (status === 409) return verb === 'create' ? 'AlreadyExists' : 'Conflict';
  return undefined;
}

/**
 * Runs one write and turns the refusals in `handled` into values; every other error is
 * rethrown unchanged.
 */
export async function asWriteResult<T, R extends Refusal>(
  verb: ApiVerb,
  handled: readonly R[],
  write: () => Promise<T>,
): Promise<WriteResult<T, R>> {
  try {
    return { ok: true, object: await write() };
  } catch (error) {
    const reason = refusalFor(verb, apiStatus(error));
    if (error instanceof ApiException && reason !== undefined && (handled as readonly Refusal[]).includes(reason)) {
      return { ok: false, reason: reason as R, error: error as ApiException<unknown> };
    }
    throw error;
  }
}

/**
 * A refusal the caller does not handle, as the error to throw: the API server's own
 * answer (a write's refusal always carries it), else an Error naming the refusal.
 */
export function refusalError(refused: Refused<Refusal>): Error {
  return refused.error ?? new Error(`the API server refused: ${refused.reason}`);
}
