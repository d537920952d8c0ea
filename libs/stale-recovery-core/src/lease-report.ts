import { LEASE_ANNOTATIONS } from '@kruntimes/api';

/** One Run epoch as a Pod Lease reports it (the Pod is the Lease's holder). */
export interface RunRef {
  uid: string;
  attempt: number;
}

/** What an owner reported in its Pod Lease; `undefined` lists: it did not report at all (an older runtimed). */
export interface LeaseReport {
  held: RunRef[] | undefined;
  released: RunRef[] | undefined;
}

/**
 * Reads the held/released annotations of a Pod Lease. Tolerant: a missing or malformed
 * annotation reads as "not reported" (undefined), never as an empty list, because an
 * empty held list is evidence that the owner dropped its Runs.
 */
export function readLeaseReport(annotations: Readonly<Record<string, string>> | undefined): LeaseReport {
  return {
    held: decodeRunRefs(annotations?.[LEASE_ANNOTATIONS.heldRuns]),
    released: decodeRunRefs(annotations?.[LEASE_ANNOTATIONS.releasedRuns]),
  };
}

export function decodeRunRefs(text: string | undefined): RunRef[] | undefined {
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed)) return undefined;
  const refs: RunRef[] = [];
  for (const item of parsed as unknown[]) {
    if (typeof item !== 'object' || item === null) return undefined;
    const { uid, attempt } = item as { uid?: unknown; attempt?: unknown };
    if (typeof uid !== 'string' || typeof attempt !== 'number' || !Number.isInteger(attempt)) return undefined;
    refs.push({ uid, attempt });
  }
  return refs;
}

export function includesRef(refs: readonly RunRef[] | undefined, uid: string, attempt: number): boolean {
  return refs?.some((ref) => ref.uid === uid && ref.attempt === attempt) === true;
}
