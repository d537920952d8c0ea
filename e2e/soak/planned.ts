import type { RunPhase } from '@kruntimes/api';
import { isPlanned } from './kinds.ts';
import type { FaultRecord } from './faults.ts';

/** A rise of a Run's attempt as the observer's watch delivered it. */
export interface AttemptRise {
  run: string;
  at: number;
  /** By how many attempts, and by how many of them status.plannedMoves rose in the same version. */
  attempts: number;
  plannedMoves: number;
}

/** After a fault ends, a Run it hit may still be moving for this long (a drain finishes, the next attempt binds). */
const AFTERMATH_MS = 60_000;

const during = (fault: FaultRecord, at: number): boolean => at >= fault.start && at <= fault.end + AFTERMATH_MS;

/**
 * The planned-disruption invariants of the soak: a Run that only a planned fault (a rollout,
 * a scale-down, an eviction: its Pod drained) hit spends no attempt on the move (each new
 * attempt is a planned move, status.plannedMoves), and a task held by a drained Pod is not
 * cut short (soak tasks run 1 s, far inside the drain window). A Run that an unplanned fault
 * hit too (a Pod deleted, frozen, killed) is left to the other invariants.
 */
export function plannedMoveViolations(
  faults: readonly FaultRecord[],
  rises: readonly AttemptRise[],
  lastPhase: ReadonlyMap<string, RunPhase | undefined>,
): string[] {
  const unplanned = faults.filter((fault) => !isPlanned(fault.kind));
  const alsoUnplanned = (run: string, at: number): boolean =>
    unplanned.some((fault) => fault.heldRuns.includes(run) && (during(fault, at) || at <= fault.start));
  const violations: string[] = [];
  for (const fault of faults.filter((f) => isPlanned(f.kind))) {
    for (const rise of rises) {
      if (!fault.heldRuns.includes(rise.run) || !during(fault, rise.at) || alsoUnplanned(rise.run, rise.at)) continue;
      if (rise.attempts > rise.plannedMoves)
        violations.push(`${rise.run}: ${fault.kind} ${fault.target} spent ${String(rise.attempts - rise.plannedMoves)} attempt(s)`);
    }
    for (const run of fault.heldRuns) {
      if (lastPhase.get(run) !== 'Interrupted' || unplanned.some((other) => other.heldRuns.includes(run))) continue;
      violations.push(`${run}: held by a Pod that ${fault.kind} ${fault.target} drained, ended Interrupted`);
    }
  }
  return violations;
}
