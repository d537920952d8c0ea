import type { RunPhase } from '@kruntimes/api';
import { mayBeCollected } from '@kruntimes/run-state';

export interface CollectableRun {
  name: string;
  uid: string;
  resourceVersion: string;
  phase: RunPhase;
  creationTimestamp: string;
  completionTime: string | undefined;
  ttlSecondsAfterFinished: number | undefined;
  deleting: boolean;
}

export type TtlDecision = { action: 'keep' } | { action: 'delete' } | { action: 'wait'; afterMs: number };

/**
 * TTL cleanup, as the Job TTL-after-finished controller: a finished Run with
 * `ttlSecondsAfterFinished` is deleted that long after its `completionTime`. An active
 * Run is never deleted, whatever its TTL says (run-state's mayBeCollected).
 */
export function ttlDecision(run: CollectableRun, nowMs: number): TtlDecision {
  if (run.deleting || run.ttlSecondsAfterFinished === undefined || !mayBeCollected(run.phase)) return { action: 'keep' };
  const finished = Date.parse(run.completionTime ?? run.creationTimestamp);
  // A terminal Run always has a completionTime (the state machine sets it); a
  // hand-written one without it falls back to its creation, never to "keep forever".
  if (Number.isNaN(finished)) return { action: 'keep' };
  const expiresMs = finished + run.ttlSecondsAfterFinished * 1000;
  return expiresMs <= nowMs ? { action: 'delete' } : { action: 'wait', afterMs: expiresMs - nowMs };
}

/**
 * Completed-Run GC per Runtime: keeps the `keep` most recently finished Runs and returns
 * the rest, oldest first. Only finished Runs are candidates; Runs already being deleted
 * are neither kept nor returned (they are on their way out).
 */
export function historyToCollect(runs: readonly CollectableRun[], keep: number): CollectableRun[] {
  const finished = runs
    .filter((run) => !run.deleting && mayBeCollected(run.phase))
    .sort((a, b) => finishedAt(b) - finishedAt(a) || (a.name < b.name ? 1 : a.name > b.name ? -1 : 0));
  return finished.slice(Math.max(0, keep)).reverse();
}

function finishedAt(run: CollectableRun): number {
  const time = Date.parse(run.completionTime ?? run.creationTimestamp);
  return Number.isNaN(time) ? 0 : time;
}
