import { CHECKPOINT_ARTIFACT_ID, parseArtifactObjectKey } from '@kruntimes/api';
import type { RunStatus } from '@kruntimes/api';

/** What the retention controller knows of one live Run (from its informer). */
export interface LiveRunAttempt {
  /** status.attempt; 0 (or undefined) when no attempt has started. */
  attempt: number | undefined;
  /** Whether the Run is in a terminal phase: no attempt after status.attempt will ever upload. */
  terminal: boolean;
  /**
   * Attempts whose checkpoint object (`krt.checkpoint`) an active Run still needs: the one
   * it waits with (status.waitingInput) and the one its continuation starts from
   * (status.resume). checkpointAttemptsNeeded gives them from the status.
   */
  checkpointAttempts: readonly number[];
}

/**
 * The attempts whose checkpoint a Run still needs: a waiting Run's, and the one every
 * attempt of a continuation (its retries too) is given. Both may be set at once (a
 * continuation that waits again); a superseded one is harmless to keep until the Run
 * moves on.
 */
export function checkpointAttemptsNeeded(status: Pick<RunStatus, 'waitingInput' | 'resume'> | undefined): number[] {
  const attempts = [status?.waitingInput?.checkpoint.attempt, status?.resume?.checkpoint.attempt];
  return attempts.filter((attempt): attempt is number => attempt !== undefined);
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
 * neither are the current attempt's objects of a Run still running, nor the checkpoint
 * (`krt.checkpoint`) of an earlier attempt that an active Run waits with or continues
 * from: removing it would leave the continuation nothing to start from.
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
    const neededCheckpoint = !run.terminal && parts.artifactId === CHECKPOINT_ARTIFACT_ID && run.checkpointAttempts.includes(parts.attempt);
    if (neededCheckpoint) continue;
    if (parts.attempt < current || (run.terminal && parts.attempt !== current)) {
      remove.push({ key: object.key, reason: 'SupersededAttempt' });
    }
  }
  return { remove, nextExpiryMs };
}
