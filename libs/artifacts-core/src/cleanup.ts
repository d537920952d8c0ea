import { parseArtifactObjectKey } from '@kruntimes/api';

/** What the retention controller knows of one live Run (from its informer). */
export interface LiveRunAttempt {
  /** status.attempt; 0 (or undefined) when no attempt has started. */
  attempt: number | undefined;
  /** Whether the Run is in a terminal phase: no attempt after status.attempt will ever upload. */
  terminal: boolean;
}

export interface StoredObject {
  key: string;
  lastModified: Date;
}

export interface ArtifactCleanupInput {
  objects: readonly StoredObject[];
  /** `<prefix>/<namespace>/`: only keys of this shape are considered. */
  namespacePrefix: string;
  /** Every Run of the namespace by UID. */
  runs: ReadonlyMap<string, LiveRunAttempt>;
  now: Date;
  /** The ArtifactStore's retentionAfterRunDeleted. */
  retentionMs: number;
  /**
   * The least age of an object before a missing Run counts as deleted: a Run created a
   * moment ago may not be in the caller's cache yet, and its first upload must not go.
   */
  unknownRunGraceMs: number;
}

export type CleanupReason = 'RunDeleted' | 'SupersededAttempt';

export interface CleanupDecision {
  /** Keys to remove, with why. */
  remove: { key: string; reason: CleanupReason }[];
  /** When the next object of a deleted Run passes its retention (ms from now), if one is waiting. */
  nextExpiryMs: number | undefined;
}

/**
 * Which objects of a namespace to remove:
 * - of a Run that no longer exists, once it is older than the retention (counted from its upload);
 * - of a live Run, under an attempt before status.attempt (that attempt was superseded and can
 *   no longer succeed), and, for a terminal Run, under any attempt other than status.attempt
 *   (the final attempt's objects are the Run's artifacts; nothing else will become one).
 * Keys that are not artifact keys (`<runUid>/<attempt>/<artifactId>`) are never touched, and
 * neither are the current attempt's objects of a Run still running.
 */
export function decideArtifactCleanup(input: ArtifactCleanupInput): CleanupDecision {
  const remove: CleanupDecision['remove'] = [];
  let nextExpiryMs: number | undefined;
  for (const object of input.objects) {
    const parts = parseArtifactObjectKey(input.namespacePrefix, object.key);
    if (parts === undefined) continue;
    const run = input.runs.get(parts.runUid);
    if (run === undefined) {
      const keptMs = Math.max(input.retentionMs, input.unknownRunGraceMs);
      const dueInMs = object.lastModified.getTime() + keptMs - input.now.getTime();
      if (dueInMs <= 0) remove.push({ key: object.key, reason: 'RunDeleted' });
      else nextExpiryMs = Math.min(nextExpiryMs ?? dueInMs, dueInMs);
      continue;
    }
    const current = run.attempt ?? 0;
    if (parts.attempt < current || (run.terminal && parts.attempt !== current)) {
      remove.push({ key: object.key, reason: 'SupersededAttempt' });
    }
  }
  return { remove, nextExpiryMs };
}
