import type { RunPhase } from '@kruntimes/api';
import { isPlanned } from './kinds.ts';
import type { FaultRecord } from './faults.ts';

/** A rise of a Run's attempt as the observer's watch delivered it. */
export interface AttemptRise {
  run: string;
  at: number;
  /** The attempt before and after (0 before the first bind), and by how much status.plannedMoves rose in the same version. */
  from: number;
  to: number;
  plannedMoves: number;
}

/**
 * Attempts a rise spent: the first bind starts attempt 1 (0 -> 1) and spends none, since a Run
 * runs at least once; every attempt after it is a new execution, a move or a retry.
 */
const attemptsSpent = (rise: AttemptRise): number => rise.to - Math.max(rise.from, 1);

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
      const spent = attemptsSpent(rise) - rise.plannedMoves;
      if (spent > 0)
        violations.push(
          `${rise.run}: ${fault.kind} ${fault.target} spent ${String(spent)} attempt(s) (attempt ${String(rise.from)} -> ${String(rise.to)})`,
        );
    }
    for (const run of fault.heldRuns) {
      if (lastPhase.get(run) !== 'Interrupted' || unplanned.some((other) => other.heldRuns.includes(run))) continue;
      violations.push(`${run}: held by a Pod that ${fault.kind} ${fault.target} drained, ended Interrupted`);
    }
  }
  return violations;
}
